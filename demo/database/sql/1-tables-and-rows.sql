-- A shop's database: 20 tables of the same shape, 200 rows each. Debezium's connector captures
-- every table of schema public (and those created later).
do $$
declare
  t text;
begin
  foreach t in array array['customers', 'orders', 'order_lines', 'products', 'categories', 'suppliers',
                           'warehouses', 'stock', 'shipments', 'carriers', 'invoices', 'payments', 'refunds',
                           'coupons', 'reviews', 'addresses', 'employees', 'stores', 'returns', 'price_lists']
  loop
    execute format('create table %I (id int primary key, name text, qty int, price numeric(12,2), '
                   'active boolean, updated_at timestamptz not null default now())', t);
    execute format('insert into %I (id, name, qty, price, active) '
                   'select g, %L || '' '' || g, g %% 7, g * 1.25, g %% 2 = 0 from generate_series(1, 200) g', t, t);
  end loop;
end $$;
