{#-
  The top-level fields of a struct's type as Spark writes it in a describe
  (`struct<id:int,amount:decimal(10,2),source:struct<ts_ms:bigint>>`), as
  [[name, type text], ...]; none when the text is not such a struct, or when
  a field cannot be read from it without doubt: Spark cuts a struct of more
  than spark.sql.debug.maxToStringFields fields short ("... 5 more fields"),
  and writes names unquoted, so a name must be one Avro allows (letters,
  digits, `_`, not first a digit) and a type must start with its name. A
  caller asks Spark itself when this says none.
-#}
{% macro zync_struct_fields(type_text) -%}
  {%- if not (type_text.startswith('struct<') and type_text.endswith('>')) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set fields = [] -%}
  {%- set pending = [] -%}
  {#- A comma splits fields only outside a nested type's brackets: decimal(10,2), map<string,int>. -#}
  {%- for piece in type_text[7:-1].split(',') -%}
    {%- do pending.append(piece) -%}
    {%- set text = pending | join(',') -%}
    {%- if text.count('<') + text.count('(') == text.count('>') + text.count(')') -%}
      {%- set name, _, type = text.partition(':') -%}
      {%- set type_name = type.split('<')[0].split('(')[0] -%}
      {%- if not (name and (name[0].isalpha() or name[0] == '_') and name.replace('_', 'a').isalnum() and name.isascii()
                  and type_name and type_name.replace('_', 'a').isalpha() and type_name.islower()) -%}
        {{ return(none) }}
      {%- endif -%}
      {%- do fields.append([name, type]) -%}
      {%- do pending.clear() -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(fields if fields and not pending else none) }}
{%- endmacro %}
