{#- The table of a stream named by its model's name, or the name itself (schema.table). -#}
{% macro stream_relation(name) -%}
  {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.name == name -%}
    {{ return(api.Relation.create(database=node.database, schema=node.schema,
                                  identifier=node.alias)) }}
  {%- endfor -%}
  {{ return(name) }}
{%- endmacro %}
