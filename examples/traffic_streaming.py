"""Seed 001: maximum lane flow per freeway over 50 s intervals sliding every 25 s, discard age
1000 s, as a streaming table. A generator appends JSON files of readings to a folder, some of
them late; after each file the stream runs (trigger AVAILABLE NOW) and the table is printed.

    .venv/bin/python examples/traffic_streaming.py [work folder]
"""

import datetime
import json
import sys
import tempfile
from pathlib import Path

T0 = datetime.datetime(2024, 1, 1, 8, 0, 0)
QUERY = """
    SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
           MAX(lane_flow) AS flow, MAX_BY(event_time, lane_flow) AS at, PANE_TIMING() AS timing
    FROM STREAM(traffic)
    WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
    WATERMARK DELAY 5"""

# (seconds after T0, freeway, lane flow); the third file holds late readings for 08:00:10-40.
FILES = [
    [(5, "I-80", 310), (12, "I-80", 420), (20, "US-101", 150), (31, "I-80", 380)],
    [(48, "US-101", 260), (55, "I-80", 290), (77, "US-101", 505), (90, "I-80", 515)],
    [(14, "I-80", 610), (40, "US-101", 330), (118, "I-80", 250)],
    [(160, "US-101", 120), (176, "I-80", 90)],
]


def write_file(folder: Path, index: int, readings) -> None:
    with open(folder / f"readings_{index:03d}.json", "w") as out:
        for seconds, freeway, flow in readings:
            stamp = (T0 + datetime.timedelta(seconds=seconds)).isoformat()
            out.write(json.dumps({"event_time": stamp, "freeway": freeway,
                                  "lane_flow": flow}) + "\n")


def main(spark, work: Path) -> list:
    from sql_ext.streaming import create_streaming_table

    incoming = work / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    spark.readStream.schema("event_time TIMESTAMP, freeway STRING, lane_flow INT") \
        .json(str(incoming)).createOrReplaceTempView("traffic")
    spark.sql("DROP TABLE IF EXISTS max_flow")
    for index, readings in enumerate(FILES):
        write_file(incoming, index, readings)
        create_streaming_table(spark, "max_flow", QUERY, checkpoint=str(work / "checkpoint"),
                               location=str(work / "max_flow")).awaitTermination()
        print(f"after file {index}:")
        spark.table("max_flow").orderBy("freeway", "time_start") \
            .show(truncate=False)
    return spark.table("max_flow").collect()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import sql_ext

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    session = sql_ext.session()
    session.sparkContext.setLogLevel("ERROR")
    main(session, folder)
    session.stop()
