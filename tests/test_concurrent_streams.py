"""A stream starts in a session of its own: the caller's session is never changed while a
stream starts, not even for a moment another thread could see. (Several clients managing the
same streaming tables at once: tests/test_manage_load.py.)"""

from __future__ import annotations

import threading

from test_managed_streams import _counts

STREAM_SETTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def test_a_stream_gets_its_settings_in_its_own_session(spark, tmp_path):
    """The streaming table's settings (RocksDB changelog checkpoints) reach its stream, which
    writes changelog files, while the creating session never holds them, not even for the
    moment the stream starts."""
    from sql_ext.streaming import create_streaming_table, drop_streaming_table

    assert spark.conf.get(STREAM_SETTING, None) is None
    spark.range(0, 40).selectExpr("id AS seq", "CAST(id % 2 AS STRING) AS k").write \
        .format("delta").save(str(tmp_path / "source"))
    spark.readStream.format("delta").load(str(tmp_path / "source")) \
        .createOrReplaceTempView("own_session_source")
    seen, stop = set(), threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.add(spark.conf.get(STREAM_SETTING, None))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        create_streaming_table(
            spark, "own_session_counts", _counts("own_session_source"),
            checkpoint=str(tmp_path / "checkpoint")).awaitTermination()
    finally:
        stop.set()
        watcher.join()
    assert seen == {None}
    assert list((tmp_path / "checkpoint" / "state").rglob("*.changelog"))
    assert spark.table("own_session_counts").count() == 12
    drop_streaming_table(spark, "own_session_counts")
