//! One connection to either backend, with just what the store needs:
//! statements with `$1`-style parameters, rows of plain values, explicit
//! transactions.
//!
//! The store's SQL is written once, in the dialect both SQLite (3.35+, for
//! `RETURNING`) and PostgreSQL accept; only the schema differs (see
//! `schema.rs`). Values cross as [`P`] (parameters) and [`Cell`] (results)
//! so that no query is written twice. It must not know any table.

use crate::StoreError;

/// A statement parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum P<'a> {
    /// An integer (SQLite INTEGER, PostgreSQL BIGINT), or NULL.
    I(Option<i64>),
    /// A float (REAL / DOUBLE PRECISION).
    F(f64),
    /// Text, or NULL.
    T(Option<&'a str>),
}

impl<'a> From<&'a str> for P<'a> {
    fn from(s: &'a str) -> P<'a> {
        P::T(Some(s))
    }
}

impl<'a> From<&'a String> for P<'a> {
    fn from(s: &'a String) -> P<'a> {
        P::T(Some(s))
    }
}

impl From<i64> for P<'_> {
    fn from(v: i64) -> Self {
        P::I(Some(v))
    }
}

impl rusqlite::ToSql for P<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            P::I(v) => v.to_sql(),
            P::F(v) => v.to_sql(),
            P::T(v) => v.to_sql(),
        }
    }
}

/// A value read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    I(i64),
    F(f64),
    T(String),
}

/// One result row.
#[derive(Debug)]
pub(crate) struct Row(Vec<Cell>);

impl Row {
    fn bad(i: usize, want: &str, got: &Cell) -> StoreError {
        StoreError::Corrupt {
            what: format!("column {i}: expected {want}, found {got:?}"),
        }
    }

    /// Column `i` as an integer.
    pub fn i64(&self, i: usize) -> Result<i64, StoreError> {
        match &self.0[i] {
            Cell::I(v) => Ok(*v),
            other => Err(Row::bad(i, "an integer", other)),
        }
    }

    /// Column `i` as an integer or NULL.
    pub fn opt_i64(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match &self.0[i] {
            Cell::Null => Ok(None),
            _ => self.i64(i).map(Some),
        }
    }

    /// Column `i` as a float (integers widen, as SQLite may store them).
    pub fn f64(&self, i: usize) -> Result<f64, StoreError> {
        match &self.0[i] {
            Cell::F(v) => Ok(*v),
            Cell::I(v) => Ok(*v as f64),
            other => Err(Row::bad(i, "a number", other)),
        }
    }

    /// Column `i` as text.
    pub fn text(&self, i: usize) -> Result<String, StoreError> {
        match &self.0[i] {
            Cell::T(v) => Ok(v.clone()),
            other => Err(Row::bad(i, "text", other)),
        }
    }

    /// Column `i` as text or NULL.
    pub fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match &self.0[i] {
            Cell::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

/// A connection to one of the two backends.
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Pg(Box<PgConn>),
}

/// A PostgreSQL client with its prepared statements: each statement is
/// parsed once per connection, then every use is one round trip (matters
/// for a store across a network; SQLite has `prepare_cached` for the same).
pub(crate) struct PgConn {
    pub client: postgres::Client,
    statements: std::collections::HashMap<String, postgres::Statement>,
}

impl PgConn {
    pub fn new(client: postgres::Client) -> PgConn {
        PgConn {
            client,
            statements: std::collections::HashMap::new(),
        }
    }

    fn statement(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::Sqlite(_) => "Conn::Sqlite",
            Conn::Pg(_) => "Conn::Pg",
        })
    }
}

/// `$1` → `?1` for SQLite (numbered either way; the store's SQL has no `$`
/// in literals).
fn sqlite_sql(sql: &str) -> String {
    sql.replace('$', "?")
}

fn pg_params<'a>(params: &'a [P<'a>]) -> Vec<Box<dyn postgres::types::ToSql + Sync + 'a>> {
    params
        .iter()
        .map(|p| -> Box<dyn postgres::types::ToSql + Sync> {
            match *p {
                P::I(v) => Box::new(v),
                P::F(v) => Box::new(v),
                P::T(v) => Box::new(v),
            }
        })
        .collect()
}

fn pg_cell(row: &postgres::Row, i: usize) -> Result<Cell, postgres::Error> {
    use postgres::types::Type;
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Cell::Null, Cell::I)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Cell::Null, |v| Cell::I(v.into()))
    } else if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?
            .map_or(Cell::Null, |v| Cell::I(v.into()))
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Cell::Null, Cell::F)
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map_or(Cell::Null, |v| Cell::I(v.into()))
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Cell::Null, Cell::T)
    })
}

impl Conn {
    fn sqlite_err(action: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
        move |cause| StoreError::Db { action, cause }
    }

    fn pg_err(action: &'static str) -> impl Fn(postgres::Error) -> StoreError {
        move |cause| StoreError::Pg { action, cause }
    }

    /// Run a statement; rows changed.
    pub fn exec(
        &mut self,
        action: &'static str,
        sql: &str,
        params: &[P<'_>],
    ) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c
                    .prepare_cached(&sqlite_sql(sql))
                    .map_err(Conn::sqlite_err(action))?;
                stmt.execute(rusqlite::params_from_iter(params.iter()))
                    .map(|n| n as u64)
                    .map_err(Conn::sqlite_err(action))
            }
            Conn::Pg(c) => {
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                let stmt = c.statement(sql).map_err(Conn::pg_err(action))?;
                c.client.execute(&stmt, &refs).map_err(Conn::pg_err(action))
            }
        }
    }

    /// Run a query; all its rows.
    pub fn query(
        &mut self,
        action: &'static str,
        sql: &str,
        params: &[P<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let err = Conn::sqlite_err(action);
                let mut stmt = c.prepare_cached(&sqlite_sql(sql)).map_err(&err)?;
                let n = stmt.column_count();
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(params.iter()))
                    .map_err(&err)?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().map_err(&err)? {
                    let mut cells = Vec::with_capacity(n);
                    for i in 0..n {
                        use rusqlite::types::ValueRef;
                        cells.push(match r.get_ref(i).map_err(&err)? {
                            ValueRef::Null => Cell::Null,
                            ValueRef::Integer(v) => Cell::I(v),
                            ValueRef::Real(v) => Cell::F(v),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Cell::T(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(Row(cells));
                }
                Ok(out)
            }
            Conn::Pg(c) => {
                let err = Conn::pg_err(action);
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                let stmt = c.statement(sql).map_err(&err)?;
                let rows = c.client.query(&stmt, &refs).map_err(&err)?;
                rows.iter()
                    .map(|r| {
                        (0..r.len())
                            .map(|i| pg_cell(r, i))
                            .collect::<Result<Vec<_>, _>>()
                            .map(Row)
                            .map_err(&err)
                    })
                    .collect()
            }
        }
    }

    /// Run a query expected to give at most one row.
    pub fn query_opt(
        &mut self,
        action: &'static str,
        sql: &str,
        params: &[P<'_>],
    ) -> Result<Option<Row>, StoreError> {
        Ok(self.query(action, sql, params)?.into_iter().next())
    }

    /// Run a query expected to give exactly one row.
    pub fn query_one(
        &mut self,
        action: &'static str,
        sql: &str,
        params: &[P<'_>],
    ) -> Result<Row, StoreError> {
        self.query_opt(action, sql, params)?
            .ok_or_else(|| StoreError::Corrupt {
                what: format!("{action}: no row returned"),
            })
    }

    /// Run several statements without parameters.
    pub fn batch(&mut self, action: &'static str, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(Conn::sqlite_err(action)),
            Conn::Pg(c) => c.client.batch_execute(sql).map_err(Conn::pg_err(action)),
        }
    }

    /// Run `f` in one write transaction: committed when it returns `Ok`,
    /// rolled back otherwise.
    ///
    /// SQLite: `BEGIN IMMEDIATE` takes the write lock up front, where
    /// busy_timeout applies; a deferred transaction that upgrades later can
    /// fail with SQLITE_BUSY at once when another writer got in between.
    /// PostgreSQL: READ COMMITTED; writers only insert rows with identity
    /// ids, so concurrent ones never conflict.
    pub fn tx<T>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let begin = match self {
            Conn::Sqlite(_) => "BEGIN IMMEDIATE",
            Conn::Pg(_) => "BEGIN",
        };
        self.batch("starting a write", begin)?;
        match f(self) {
            Ok(v) => {
                self.batch("committing", "COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                // The first error is the one to report; a failed rollback
                // leaves nothing committed either.
                let _ = self.batch("rolling back", "ROLLBACK");
                Err(e)
            }
        }
    }
}
