-- The same panes as traffic_flow, recomputed over the whole source (a plain table model).
{{ config(materialized='table') }}

SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
       MAX(lane_flow) AS flow, COUNT(*) AS readings
FROM {{ source('raw', 'traffic') }}
WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway)
