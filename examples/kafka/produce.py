"""Traffic readings into a Kafka topic: JSON values keyed by freeway, the way a sensor gateway
would send them; a few arrive late (their event time some seconds back).

    .venv/bin/python examples/kafka/produce.py --bootstrap 127.0.0.1:9092 --topic traffic \\
        [--rate 20] [--seconds 60] [--late 0.05]

Needs confluent-kafka: `bash python/dev.sh setup` installs it in a checkout; elsewhere it is
the wheel's `[kafka]` extra (`bash python/dev.sh wheel`, then
`pip install "dist/sql_ext-<version>-py3-none-any.whl[kafka]"`: sql-ext is not on PyPI)."""

from __future__ import annotations

import argparse
import datetime
import json
import random
import time

FREEWAYS = ("I-80", "US-101", "I-280", "SR-1")


def reading(now: datetime.datetime, rng: random.Random, late: float) -> dict:
    back = rng.uniform(10, 60) if rng.random() < late else rng.uniform(0, 1)
    return {"freeway": rng.choice(FREEWAYS), "lane": rng.randint(1, 4),
            "lane_flow": rng.randint(50, 700),
            "event_time": (now - datetime.timedelta(seconds=back)).isoformat()}


def send(producer, topic: str, readings) -> int:
    """Each reading as one message keyed by its freeway; how many were sent."""
    sent = 0
    for value in readings:
        producer.produce(topic, key=value["freeway"], value=json.dumps(value))
        producer.poll(0)
        sent += 1
    producer.flush(30)
    return sent


def main(argv: list[str] | None = None) -> int:
    from confluent_kafka import Producer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka's address, host:port")
    parser.add_argument("--topic", default="traffic")
    parser.add_argument("--rate", type=float, default=20, help="readings per second")
    parser.add_argument("--seconds", type=float, default=60, help="how long to send")
    parser.add_argument("--late", type=float, default=0.05, help="share of late readings")
    args = parser.parse_args(argv)
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True})
    rng, sent, end = random.Random(), 0, time.monotonic() + args.seconds
    while time.monotonic() < end:
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        sent += send(producer, args.topic, [reading(now, rng, args.late)
                                            for _ in range(max(1, round(args.rate)))])
        time.sleep(1)
    print(f"{sent} readings sent to {args.topic}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
