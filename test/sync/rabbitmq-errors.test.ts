import { describe, expect, it } from 'vitest';
import { explainRabbitMqError } from '../../src/sync/brokers/rabbitmq-errors.js';

const where = 'amqp://127.0.0.1:5672/ exchange payhooks.events';

// The refusals as RabbitMQ 3 words them and amqplib 2 wraps them (captured from the broker of the test machine).
const refused = (code: string, name: string, text: string) =>
  new Error(`Operation failed: QueueDeclare; ${code} (${name}) with message "${name.replace(/-/g, '_')} - ${text}"`);

describe('explainRabbitMqError', () => {
  it('a queue that exists with other arguments: which argument, both values, and what to change', () => {
    const err = refused(
      '406',
      'PRECONDITION-FAILED',
      "inequivalent arg 'x-queue-type' for queue 'payhooks.events' in vhost '/': received none but current is the value 'quorum' of type 'longstr'",
    );
    expect(explainRabbitMqError(err, 'declare the queue', where)).toBe(
      `RabbitMQ at ${where} refused to declare the queue (406 PRECONDITION_FAILED): queue 'payhooks.events' exists in vhost '/' ` +
        "with x-queue-type 'quorum', and this sink declares it with x-queue-type none: delete the queue (payhooks declares it again " +
        'at the next attempt), or configure another queue name, or queue: false to publish to the exchange alone',
    );
  });

  it('a user without the permission: says which one is missing, and never names the user of the URL', () => {
    const err = new Error(
      `Channel closed by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - access to exchange 'payhooks.events' in vhost 'shop' refused for user 'erp_writer'"`,
    );
    const text = explainRabbitMqError(err, 'declare the exchange', where);
    expect(text).toMatch(
      /^RabbitMQ at .* refused to declare the exchange \(403 ACCESS_REFUSED\): the URL's user lacks permission on exchange 'payhooks\.events' in vhost 'shop'/,
    );
    expect(text).toContain('"configure"');
    expect(text).not.toContain('erp_writer');
  });

  it('an exclusive queue of another connection, and an exchange deleted while the sink ran', () => {
    expect(
      explainRabbitMqError(
        refused('405', 'RESOURCE-LOCKED', "cannot obtain exclusive access to locked queue 'payhooks.events' in vhost '/'. It could be …"),
        'declare the queue',
        where,
      ),
    ).toMatch(
      /\(405 RESOURCE_LOCKED\): queue 'payhooks\.events' in vhost '\/' is exclusive to another connection: configure another queue name$/,
    );
    expect(
      explainRabbitMqError(
        new Error(`Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no exchange 'payhooks.events' in vhost '/'"`),
        'publish',
        where,
      ),
    ).toMatch(/refused to publish \(404 NOT_FOUND\): exchange 'payhooks\.events' does not exist .*; the next attempt declares it again$/);
  });

  it('anything else keeps its own words: a refusal it has no advice for, and a failure that is not a refusal', () => {
    expect(
      explainRabbitMqError(
        new Error(
          `Connection closed: 320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"`,
        ),
        'publish',
        where,
      ),
    ).toBe(`RabbitMQ at ${where} refused to publish (320 CONNECTION_FORCED): broker forced connection closure with reason 'shutdown'`);
    expect(explainRabbitMqError(new Error('read ECONNRESET'), 'publish', where)).toBe(
      `RabbitMQ at ${where}: cannot publish: read ECONNRESET`,
    );
  });
});
