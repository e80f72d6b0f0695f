-- Every 4 readings of a freeway, in event-time order, as one row (SPL tumbling count(4)).
{{ config(materialized='streaming_table') }}

SELECT freeway, WINDOW_ID() AS window_id, COUNT(*) AS readings,
       SUM(lane_flow) AS total_flow, MIN(event_time) AS first_at, MAX(event_time) AS last_at
FROM STREAM({{ source('raw', 'traffic') }})
WINDOW TUMBLING COUNT(4) OVER (PARTITION BY freeway ORDER BY event_time)
