// SPDX-License-Identifier: MIT
//
// node mysql2 client for test/compat/node.sh: query() (text protocol,
// client-side escaping) for the common steps, then execute() and prepare()
// (server-side prepared statements, binary protocol) for the ps_* steps.
// Prints the "key<TAB>value" lines described in test/compat/compat.sh.
'use strict';

const mysql = require('mysql2/promise');

function out(key, value) {
  process.stdout.write(`${key}\t${value}\n`);
}

function describe(err) {
  if (err && err.errno !== undefined) {
    return `${err.errno}\t${err.sqlState || '-'}\t${err.sqlMessage || err.message}`;
  }
  return String(err && err.stack ? err.stack.split('\n')[0] : err);
}

async function step(key, fn) {
  try {
    out(key, await fn());
  } catch (err) {
    out(key, 'ERROR ' + describe(err));
  }
}

async function failure(fn) {
  try {
    await fn();
  } catch (err) {
    return describe(err);
  }
  return 'no error';
}

function render(v) {
  return v === null ? 'NULL' : String(v);
}

function isCount(v) {
  return (typeof v === 'number' && Number.isInteger(v) && v >= 0) ||
    (typeof v === 'bigint' && v >= 0n);
}

const PROF = "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'";
const POINT = 'SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?';
const ECHO = ['SELECT ?, ?, ?, ?', [42, 2.5, "it's \\ ü", null]];

async function main() {
  let conn;
  try {
    conn = await mysql.createConnection({
      host: process.env.HC_HOST,
      port: Number(process.env.HC_PORT),
      user: process.env.HC_USER,
      password: process.env.HC_PASS,
      database: process.env.HC_DB,
      connectTimeout: 10000,
    });
  } catch (err) {
    out('connect', 'ERROR ' + describe(err));
    out('done', 'ok');
    return;
  }
  out('connect', 'ok');

  await step('stats_allocated', async () => {
    const [rows, fields] = await conn.query('SELECT * FROM stats_memory_jemalloc');
    out('stats_columns', fields.map((f) => f.name).join(','));
    out('stats_rows', rows.length);
    out('stats_nonnumeric', rows.filter((r) => !isCount(r.variable_value)).length);
    const row = rows.find((r) => r.variable_name === 'allocated');
    return row ? row.variable_value : '(no row)';
  });

  for (const value of ['true', 'false']) {
    await step(`update_${value}`, async () => {
      const [res] = await conn.query(
        `UPDATE global_variables SET variable_value = '${value}' WHERE variable_name = 'jemalloc-prof_active'`);
      return res.affectedRows;
    });
    await step(`prof_active_${value}`, async () => {
      const [rows] = await conn.query(PROF);
      return rows[0].variable_value;
    });
  }

  await step('error', () => failure(() => conn.query('SELECT * FROM no_such_table')));
  await step('after_error', async () => {
    const [rows] = await conn.query({ sql: 'SELECT 1', rowsAsArray: true });
    return rows[0][0];
  });

  await step('param_echo', async () => {
    const [rows] = await conn.query({ sql: ECHO[0], rowsAsArray: true }, ECHO[1]);
    return rows[0].map(render).join('|');
  });
  await step('param_point', async () => {
    const values = [];
    for (const name of ['allocated', 'narenas']) {
      const [rows] = await conn.query(POINT, [name]);
      values.push(render(rows[0].variable_value));
    }
    return values.join('|');
  });

  // Server-side prepared statements.
  await step('ps_echo', async () => {
    const [rows] = await conn.execute({ sql: ECHO[0], rowsAsArray: true }, ECHO[1]);
    return rows[0].map(render).join('|');
  });
  await step('ps_point', async () => {
    const stmt = await conn.prepare(POINT);
    try {
      const values = [];
      for (const name of ['allocated', 'narenas']) {
        const [rows] = await stmt.execute([name]);
        values.push(render(rows[0].variable_value));
      }
      return values.join('|');
    } finally {
      stmt.close();
    }
  });
  await step('ps_update', async () => {
    const values = [];
    for (const value of ['true', 'false']) {
      const [res] = await conn.execute(
        'UPDATE global_variables SET variable_value = ? WHERE variable_name = ?',
        [value, 'jemalloc-prof_active']);
      values.push(res.affectedRows);
      const [rows] = await conn.execute(
        'SELECT variable_value FROM global_variables WHERE variable_name = ?',
        ['jemalloc-prof_active']);
      values.push(render(rows[0].variable_value));
    }
    return values.join('|');
  });
  await step('ps_error', () => failure(() => conn.prepare('SELECT * FROM no_such_table')));

  await conn.end();
  out('done', 'ok');
}

main().catch((err) => {
  out('fatal', describe(err));
  process.exit(1);
});
