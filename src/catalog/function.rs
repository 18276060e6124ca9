//! User-defined functions as the catalog records them (`CREATE FUNCTION …
//! LANGUAGE sql`): name, argument types, names and defaults, result, and the
//! body as SQL text. Overloads of one name differ by argument types. Calls
//! are bound by `planner/function.rs`; the statements are `sql/function.rs`.
//! User-defined aggregates (`CREATE AGGREGATE`) are functions too, as in
//! PostgreSQL's pg_proc: one name space, an [`AggregateDef`] naming their
//! support functions (`sql/aggregate.rs`, `planner/user_agg.rs`).
//!
//! Imports `types` and `error` only (no `storage`, `exec`, `planner`, `sql`).

use serde::{Deserialize, Serialize};

use super::{Catalog, FUNCTION_PREFIX};
use crate::error::Result;
use crate::types::SqlType;
use crate::{bail, err};

/// One argument of a function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionArg {
    pub name: Option<String>,
    pub ty: SqlType,
    /// `DEFAULT expr` / `= expr`, as SQL text.
    pub default: Option<String>,
    /// `anyelement`: any type, the same for every such argument of a call
    /// (`ty` is then `Unknown`).
    #[serde(default)]
    pub polymorphic: bool,
    /// The composite type (`CREATE TYPE … AS (…)`, or a table's row type)
    /// an argument is declared as: PL/pgSQL sees it as a record of its fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
}

/// What a function returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionReturns {
    /// The result (or each row's) type; None for `void`.
    pub ty: Option<SqlType>,
    /// `RETURNS SETOF t` / `RETURNS TABLE (…)`: a set-returning function.
    pub set: bool,
    /// `RETURNS TABLE (a int, b text)`: the result's columns (empty for a
    /// single-column result).
    pub columns: Vec<(String, SqlType)>,
    /// `RETURNS trigger` (kept; weir has no triggers to call it).
    #[serde(default)]
    pub trigger: bool,
    /// `RETURNS anyelement`: the type of the call's `anyelement` arguments.
    #[serde(default)]
    pub polymorphic: bool,
    /// `RETURNS [SETOF] t` for a composite type or a table's row type: t, whose
    /// fields are the function's columns in FROM (each value is t's record text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
}

/// What `CREATE AGGREGATE` names: the support functions (user functions of
/// the aggregate's database, found again by name and argument types when a
/// call is bound) and the state types and initial conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateDef {
    /// SFUNC(state, args…) → state.
    pub sfunc: String,
    pub stype: SqlType,
    /// FINALFUNC(state) → result; without it the state is the result.
    pub finalfunc: Option<String>,
    /// INITCOND as written (a literal of `stype`); None: a NULL state.
    pub initcond: Option<String>,
    /// The moving-aggregate support (window frames whose head moves):
    /// MSFUNC, MINVFUNC (removes a row), MSTYPE, MFINALFUNC, MINITCOND.
    pub msfunc: Option<String>,
    pub minvfunc: Option<String>,
    pub mstype: Option<SqlType>,
    pub mfinalfunc: Option<String>,
    pub minitcond: Option<String>,
}

/// A function's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    /// Drawn from the id generator tables use, so the OID is stable.
    pub id: u32,
    pub database: String,
    pub name: String,
    pub args: Vec<FunctionArg>,
    pub returns: FunctionReturns,
    /// `sql` or `plpgsql` (its `BEGIN RETURN expr; END` subset).
    pub language: String,
    /// The body's SQL statements (`RETURN expr` is kept as `SELECT expr`);
    /// for plpgsql, the expression it returns, as a `SELECT`, or empty when
    /// the body is more than that (kept, not run: PostgreSQL too checks a
    /// PL/pgSQL body when it runs).
    pub body: String,
    /// The body as written (`pg_proc.prosrc`).
    pub source: String,
    /// `i`, `s` or `v` (`pg_proc.provolatile`).
    pub volatility: char,
    /// STRICT: NULL in any argument gives NULL without running the body.
    pub strict: bool,
    /// Set for an aggregate (`CREATE AGGREGATE`; `language` is `internal`
    /// and there is no body).
    #[serde(default)]
    pub aggregate: Option<AggregateDef>,
}

impl FunctionDef {
    /// The argument types, the identity of one overload.
    pub fn arg_types(&self) -> Vec<SqlType> {
        self.args.iter().map(|a| a.ty).collect()
    }

    /// Arguments a call must give (the rest have defaults).
    pub fn required_args(&self) -> usize {
        self.args.iter().position(|a| a.default.is_some()).unwrap_or(self.args.len())
    }

    /// `name(type, …)` as PostgreSQL writes a function's signature.
    pub fn signature(&self) -> String {
        let names: Vec<&str> = self.args.iter().map(|a| if a.polymorphic { "anyelement" } else { a.ty.pg_name() }).collect();
        format!("{}({})", self.name, names.join(", "))
    }

    pub(super) fn key(&self) -> String {
        let names: Vec<&str> = self.args.iter().map(|a| if a.polymorphic { "ANYELEMENT" } else { a.ty.sql_name() }).collect();
        format!("{FUNCTION_PREFIX}{}/{}/{}", self.database, self.name, names.join(","))
    }
}

/// `name(type, …)`.
pub fn signature(name: &str, types: &[SqlType]) -> String {
    let names: Vec<&str> = types.iter().map(|t| t.pg_name()).collect();
    format!("{name}({})", names.join(", "))
}

impl Catalog {
    /// Create a function, or with `or_replace` replace the one with the
    /// same argument types (it keeps its id; the result type may not change).
    pub fn create_function(&self, mut def: FunctionDef, or_replace: bool) -> Result<()> {
        let mut st = self.state.write();
        let list = st.functions.entry((def.database.clone(), def.name.clone())).or_default();
        let types = def.arg_types();
        match list.iter().position(|f| f.arg_types() == types) {
            Some(i) => {
                if !or_replace {
                    bail!(DuplicateFunction, "function \"{}\" already exists with same argument types", def.name);
                }
                let old = &list[i];
                if old.returns != def.returns {
                    return Err(err!(InvalidFunctionDefinition, "cannot change return type of existing function")
                        .with_hint(format!("Use DROP FUNCTION {} first.", old.signature())));
                }
                def.id = old.id;
                self.put(def.key(), serde_json::to_vec(&def).expect("a function definition serializes"))?;
                list[i] = def;
            }
            None => {
                def.id = self.next_table_id()?;
                self.put(def.key(), serde_json::to_vec(&def).expect("a function definition serializes"))?;
                list.push(def);
            }
        }
        Ok(())
    }

    /// Drop the overload of `name` with these argument types; None when
    /// there is none.
    pub fn drop_function(&self, database: &str, name: &str, types: &[SqlType]) -> Result<Option<FunctionDef>> {
        let mut st = self.state.write();
        let k = (database.to_string(), name.to_string());
        let Some(list) = st.functions.get_mut(&k) else { return Ok(None) };
        let Some(i) = list.iter().position(|f| f.arg_types() == types) else { return Ok(None) };
        let def = list.remove(i);
        if list.is_empty() {
            st.functions.remove(&k);
        }
        self.del(def.key())?;
        Ok(Some(def))
    }

    /// Every overload of `name` in a database.
    pub fn functions(&self, database: &str, name: &str) -> Vec<FunctionDef> {
        self.state.read().functions.get(&(database.to_string(), name.to_string())).cloned().unwrap_or_default()
    }

    /// Every function of a database.
    pub fn database_functions(&self, database: &str) -> Vec<FunctionDef> {
        self.state.read().functions.iter().filter(|(k, _)| k.0 == database).flat_map(|(_, v)| v.iter().cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, types: &[SqlType], body: &str) -> FunctionDef {
        FunctionDef {
            id: 0,
            database: "public".into(),
            name: name.into(),
            args: types.iter().map(|t| FunctionArg { name: None, ty: *t, default: None, polymorphic: false, type_name: None }).collect(),
            returns: FunctionReturns {
                ty: Some(SqlType::Int4),
                set: false,
                columns: vec![],
                trigger: false,
                polymorphic: false,
                type_name: None,
            },
            language: "sql".into(),
            body: body.into(),
            source: body.into(),
            volatility: 'v',
            strict: false,
            aggregate: None,
        }
    }

    #[test]
    fn functions_survive_a_reopen_and_overloads_drop_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cat = Catalog::open(dir.path()).unwrap();
            cat.create_function(def("f", &[SqlType::Int4], "SELECT $1"), false).unwrap();
            cat.create_function(def("f", &[SqlType::Text], "SELECT 1"), false).unwrap();
            let e = cat.create_function(def("f", &[SqlType::Int4], "SELECT 2"), false).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::DuplicateFunction);
            cat.create_function(def("f", &[SqlType::Int4], "SELECT 2"), true).unwrap();
        }
        let cat = Catalog::open(dir.path()).unwrap();
        let fs = cat.functions("public", "f");
        assert_eq!(fs.len(), 2);
        assert_eq!(fs.iter().find(|f| f.arg_types() == [SqlType::Int4]).unwrap().body, "SELECT 2");
        assert!(cat.drop_function("public", "f", &[SqlType::Text]).unwrap().is_some());
        assert!(cat.drop_function("public", "f", &[SqlType::Text]).unwrap().is_none());
        drop(cat);
        let cat = Catalog::open(dir.path()).unwrap();
        assert_eq!(cat.functions("public", "f").len(), 1);
        cat.drop_database("public").unwrap();
        assert!(cat.database_functions("public").is_empty());
    }
}
