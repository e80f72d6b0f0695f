-- Final results only: one row per pane when it closes (the watermark passed its end), never
-- re-fired, so the table is append-only; readings that come too late to join their pane are
-- kept as rows of their own in traffic_flow_late (with the watermark that dropped them).
{{ config(materialized='streaming_table') }}

SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, PANE_TIMING() AS timing,
       MAX(lane_flow) AS flow, COUNT(*) AS readings
FROM STREAM({{ source('raw', 'traffic') }})
WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway)
WATERMARK DELAY 5 LATE ROWS INTO {{ target.schema }}.traffic_flow_late EMIT FINAL
