{#
  The keys of a run's changes as a predicate on the mirror's side of the
  MERGE, their values written out: mirror.`id` in (3, 17, ...), or
  (mirror.`a`, mirror.`b`) in ((1, 'x'), ...) for a composite key. It changes
  no match (every change's key passes it), but it is why a run costs its
  changes rather than the mirror: Delta's MERGE joins the changes to every
  row of each file holding a changed key (with keys spread over the key
  space that is every file), in its write pass as an outer join that
  shuffles them all; Spark evaluates this literal list (a hash set) in the
  mirror's scan, so the join meets only the rows it can match. Delta also
  skips the files whose key range misses the list's (a long list counts as
  the range from its smallest to its largest key).
  none (no filter) when a key column's type has no literal form here: the
  integral types, string and date do.
#}
{% macro zync_mirror_key_filter(changes_relation, key_names) -%}
  {%- set types = {} -%}
  {%- for column in adapter.get_columns_in_relation(changes_relation) -%}
    {%- do types.update({column.name | lower: column.data_type | lower}) -%}
  {%- endfor -%}
  {%- set literals = [] -%}
  {%- for name in key_names -%}
    {%- set data_type = types.get(name | lower) -%}
    {%- set value = adapter.quote(name) -%}
    {%- if data_type in ('tinyint', 'smallint', 'int', 'bigint') -%}
      {%- do literals.append('cast(' ~ value ~ ' as string)') -%}
    {%- elif data_type == 'string' -%}
      {#- a Spark SQL string literal: backslashes and quotes escaped with a backslash -#}
      {%- set as_string -%}concat("'", replace(replace(VALUE, "\\", "\\\\"), "'", "\\'"), "'"){%- endset -%}
      {%- do literals.append(as_string | replace('VALUE', value)) -%}
    {%- elif data_type == 'date' -%}
      {%- do literals.append('concat("date' ~ "'" ~ '", cast(' ~ value ~ ' as string), "' ~ "'" ~ '")') -%}
    {%- else -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {%- set or_null = [] -%}
  {%- for literal in literals -%}{%- do or_null.append("coalesce(" ~ literal ~ ", 'null')") -%}{%- endfor -%}
  {%- set tuple = or_null[0] if key_names | length == 1 else "concat('(', " ~ or_null | join(", ', ', ") ~ ", ')')" -%}
  {%- set listed = run_query('select concat_ws(\', \', collect_list(' ~ tuple ~ ')) from ' ~ changes_relation).columns[0].values()[0] -%}
  {%- if not listed -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set mirror_key = [] -%}
  {%- for name in key_names -%}{%- do mirror_key.append('mirror.' ~ adapter.quote(name)) -%}{%- endfor -%}
  {%- set left = mirror_key[0] if key_names | length == 1 else '(' ~ mirror_key | join(', ') ~ ')' -%}
  {{ return(left ~ ' in (' ~ listed ~ ')') }}
{%- endmacro %}
