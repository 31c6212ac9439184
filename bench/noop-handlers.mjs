// `payhooks serve --handlers bench/noop-handlers.mjs`: one handler that does nothing, so a drain measures payhooks.
export default (hooks) => {
  hooks.onAny(() => {});
};
