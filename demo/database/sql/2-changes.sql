-- Changes to every table: updates (one to NULL), creates and deletes.
do $$
declare
  t text;
begin
  for t in select tablename from pg_tables where schemaname = 'public' order by 1
  loop
    execute format('update %I set qty = qty + 100, price = price * 2, updated_at = now() where id <= 10', t);
    execute format('update %I set name = null where id = 11', t);
    execute format('delete from %I where id between 191 and 200', t);
    execute format('insert into %I (id, name, qty, price, active) '
                   'select g, ''new '' || g, 1, 9.99, true from generate_series(201, 205) g', t);
  end loop;
end $$;
