-- SPL seed 001 as a streaming model: the maximum lane flow per freeway over 50 s intervals
-- that start every 25 s, late readings accepted for 1000 s. Each dbt run processes what was
-- appended since the last one, exactly once; a re-fired pane replaces its row.
{{ config(materialized='streaming_table') }}

SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
       MAX(lane_flow) AS flow, COUNT(*) AS readings
FROM STREAM({{ source('raw', 'traffic') }})
WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
WATERMARK DELAY 5
