{#
  The default primary key as [[name, SQL over the raw row], ...]: every
  field of the raw table's Kafka key (`key`.`f`, Debezium's semantic types
  typed: zync_typed_column), or `key` itself when the key is not a record.
  `notes`: the raw table's field notes when the caller has read them
  (zync_field_notes), else they are read here; `raw_columns`: its columns
  (zync_mirror_raw_columns), likewise.
#}
{% macro zync_mirror_key_columns(source_relation, notes=none, raw_columns=none) -%}
  {%- set names = zync_mirror_raw_key_names(source_relation, raw_columns) -%}
  {%- if names is none -%}
    {{ return([['key', '`key`']]) }}
  {%- endif -%}
  {%- set notes = notes if notes is not none else zync_field_notes(source_relation) -%}
  {%- set columns = [] -%}
  {%- for name in names -%}
    {%- do columns.append([name, zync_typed_column(source_relation, 'key.' ~ name, notes)]) -%}
  {%- endfor -%}
  {{ return(columns) }}
{%- endmacro %}
