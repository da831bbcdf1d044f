-- A table added to the database while everything runs: the connector captures it, zync mirrors it.
create table gift_cards (id int primary key, name text, qty int, price numeric(12,2), active boolean,
                         updated_at timestamptz not null default now());
insert into gift_cards (id, name, qty, price, active)
select g, 'card ' || g, 1, g * 10, true from generate_series(1, 50) g;
update gift_cards set active = false where id <= 5;
