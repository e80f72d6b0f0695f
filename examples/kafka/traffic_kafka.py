"""Seed 001 fed from Kafka: the maximum lane flow per freeway over 50 s intervals sliding every
25 s (discard age 1000 s), as a streaming table over a Kafka topic declared as a table. The
readings go to the topic in four rounds (the third holds late readings); after each round one
REFRESH reads what came, and the table is printed.

    .venv/bin/python examples/kafka/traffic_kafka.py <bootstrap host:port> [topic]

(`bash python/dev.sh kafka` starts a broker on 127.0.0.1:9092 to try it.)"""

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# The file example's readings, one round of messages per file (the third holds late ones).
from traffic_streaming import FILES as ROUNDS, T0  # noqa: E402

TOPIC_TABLE = """
    CREATE TABLE traffic_topic (freeway STRING, lane_flow INT, event_time TIMESTAMP)
    USING kafka
    OPTIONS ('kafka.bootstrap.servers' = '{bootstrap}', 'subscribe' = '{topic}',
             'format' = 'json')"""
STREAMING_TABLE = """
    CREATE STREAMING TABLE max_flow_kafka TRIGGER AVAILABLE NOW AS
    SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
           MAX(lane_flow) AS flow, PANE_TIMING() AS timing
    FROM STREAM(traffic_topic)
    WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
    WATERMARK DELAY 5"""


def readings(round_):
    return [{"freeway": freeway, "lane_flow": flow,
             "event_time": (T0 + datetime.timedelta(seconds=seconds)).isoformat()}
            for seconds, freeway, flow in round_]


def main(spark, bootstrap: str, topic: str = "traffic_seed") -> list:
    from confluent_kafka import Producer

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from produce import send

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for table in ("max_flow_kafka", "traffic_topic"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(TOPIC_TABLE.format(bootstrap=bootstrap, topic=topic))
    for index, round_ in enumerate(ROUNDS):
        send(producer, topic, readings(round_))
        if index == 0:
            spark.sql(STREAMING_TABLE)
        else:
            spark.sql("REFRESH STREAMING TABLE max_flow_kafka")
        print(f"after round {index}:")
        spark.table("max_flow_kafka").orderBy("freeway", "time_start").show(truncate=False)
    return spark.table("max_flow_kafka").collect()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import sql_ext

    if len(sys.argv) < 2:
        sys.exit(__doc__)
    session = sql_ext.session()
    session.sparkContext.setLogLevel("ERROR")
    main(session, sys.argv[1], *sys.argv[2:3])
    session.stop()
