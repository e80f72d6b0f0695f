-- A plain Spark streaming table and flow: Spark's own grammar, untouched by sql-ext.
CREATE STREAMING TABLE i80_readings;

CREATE FLOW i80_only AS INSERT INTO i80_readings BY NAME
SELECT seq, event_time, lane_flow FROM STREAM(readings) WHERE freeway = 'I-80';

-- A windowed materialized view (batch windows, recomputed on each run): seed 001's panes.
CREATE MATERIALIZED VIEW max_flow AS
SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, MAX(lane_flow) AS flow
FROM readings
WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway);

-- Count windows over the readings in arrival order.
CREATE MATERIALIZED VIEW flow_every_3 AS
SELECT freeway, WINDOW_ID() AS w, COUNT(*) AS n, AVG(lane_flow) AS avg_flow
FROM readings
WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway ORDER BY seq);

-- A windowed streaming table: each freeway's readings in count windows of 3, in arrival
-- order, a row appended as each window flushes.
CREATE STREAMING TABLE flow_per_3 AS
SELECT freeway, WINDOW_ID() AS w, COUNT(*) AS n, MAX(lane_flow) AS max_flow
FROM STREAM(readings)
WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway);

-- A windowed flow into a streaming table: 50-second panes every 25 seconds, each appended
-- once, when the watermark (10 seconds behind the latest reading) closes it.
CREATE STREAMING TABLE pane_flow;

CREATE FLOW pane_flow_final AS INSERT INTO pane_flow BY NAME
SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
       SUM(lane_flow) AS total_flow, COUNT(*) AS readings
FROM STREAM(readings)
WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway)
WATERMARK DELAY 10 EMIT FINAL;
