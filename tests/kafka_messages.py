"""Producing test messages to the test broker with a client that is not Spark's
(confluent-kafka, librdkafka): each message's partition and offset come back from the broker's
delivery report, so the tests know the topic's content without reading it through Spark."""

from __future__ import annotations

import json
from dataclasses import dataclass

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass(frozen=True)
class Message:
    key: str | None
    value: str | None
    partition: int
    offset: int
    timestamp_ms: int

    def fields(self) -> dict | None:
        """The value as the table decodes it (a JSON object), None when it does not."""
        try:
            decoded = json.loads(self.value) if self.value is not None else None
        except ValueError:
            return None
        return decoded if isinstance(decoded, dict) else None


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=60)


def produce(bootstrap: str, topic: str, messages, partition_of=None) -> list[Message]:
    """Sends (key, value) pairs in order (value a dict is sent as JSON, a str as it is), each
    key to partition `partition_of(key)` when given; the messages as the broker stored them."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})
    stored: list[Message] = []
    failures = []

    def delivered(error, message):
        if error is not None:
            failures.append(error)
            return
        key, value = message.key(), message.value()
        stored.append(Message(key.decode() if key is not None else None,
                              value.decode() if value is not None else None,
                              message.partition(), message.offset(), message.timestamp()[1]))

    for key, value in messages:
        payload = json.dumps(value) if isinstance(value, dict) else value
        extra = {} if partition_of is None else {"partition": partition_of(key)}
        producer.produce(topic, key=key, value=payload, on_delivery=delivered, **extra)
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures
    return stored
