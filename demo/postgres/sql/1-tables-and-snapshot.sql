-- The invoices example as real tables; these rows are there before Debezium
-- starts, so they arrive as its snapshot (op 'r').
create table invoices (
    "ID" integer primary key,
    customer text not null,
    item text,
    amount numeric(10,2) not null,
    issued_at timestamptz not null default now(),
    paid boolean not null default false,
    note text
);
create table invoice_status (
    "ID" integer primary key,
    "InvoiceID" integer not null,
    status text not null,
    changed_at timestamptz not null default now()
);
insert into invoices ("ID", customer, item, amount) values (100, 'Alice', 'taco', 4.50), (101, 'Bob', 'burrito', 8.25);
insert into invoice_status ("ID", "InvoiceID", status) values (80, 101, 'pending'), (32, 100, 'pending');
