//! The privilege inquiry functions, answered from the catalog's owners and
//! ACLs at plan time: `has_table_privilege`, `has_database_privilege`,
//! `has_schema_privilege`, `has_column_privilege`, `has_any_column_privilege`,
//! `pg_has_role` and `pg_get_userbyid`, in all their argument forms (with or without the
//! user; names or OIDs). Constant arguments give a constant; a column (say
//! `c.oid`) becomes a CASE over the objects, as `regtypes.rs` does.
//!
//! May import `exec`, `catalog`, `types`, `error`; never `sql` or `server`.

use sqlparser::ast;

use super::bind::AggCollector;
use super::system::{database_namespace_oid, database_oid, is_reserved_schema, table_oid, view_oid, SYSTEM_RELATIONS};
use super::{Planner, Scope};
use crate::catalog::acl::{self, AclObject};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// An argument: known at plan time, or computed per row.
enum Arg {
    Const(Value),
    Dyn(Expr),
}

/// What an OID or name resolves to.
#[derive(Clone)]
enum Obj {
    Acl(AclObject),
    /// A pg_catalog / information_schema relation (readable by PUBLIC,
    /// pg_authid by superusers only).
    System(String),
    /// A schema: pg_catalog and information_schema (USAGE for everyone),
    /// or a database's (USAGE for everyone; CREATE from the database).
    Schema(Option<String>),
    Role(String),
}

/// The privilege list of the last argument: ('SELECT, INSERT WITH GRANT
/// OPTION'): any of them answers true.
fn parse_privileges(text: &str, allowed: &[&str]) -> Result<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let p = part.trim().to_ascii_uppercase();
        let words: Vec<&str> = p.split_whitespace().collect();
        let (name, grant) = match words.as_slice() {
            [n] => (n.to_string(), false),
            [n, "WITH", "GRANT", "OPTION"] | [n, "WITH", "ADMIN", "OPTION"] => (n.to_string(), true),
            _ => bail!(InvalidParameterValue, "unrecognized privilege type: \"{}\"", part.trim()),
        };
        if !allowed.contains(&name.as_str()) {
            bail!(InvalidParameterValue, "unrecognized privilege type: \"{}\"", part.trim());
        }
        out.push((name, grant));
    }
    Ok(out)
}

impl Planner<'_> {
    fn privilege_arg(&self, a: &ast::Expr, scope: &Scope, agg: Option<&AggCollector>) -> Result<Arg> {
        let e = self.bind_expr(a, scope, agg)?;
        if let Expr::Literal { value, .. } = &e {
            return Ok(Arg::Const(value.clone()));
        }
        if e.columns_used().is_empty() && !e.has_subquery() {
            if let Ok(v) = self.eval_const(&e) {
                return Ok(Arg::Const(v));
            }
        }
        Ok(Arg::Dyn(e))
    }

    /// Relations of this database by OID and name, and the system tables.
    fn relation_objects(&self) -> Vec<(i64, String, Obj)> {
        let db = self.database.clone();
        let mut v: Vec<(i64, String, Obj)> =
            SYSTEM_RELATIONS.iter().map(|(oid, n)| (*oid, n.to_string(), Obj::System(n.to_string()))).collect();
        for t in self.catalog.tables(&db) {
            v.push((table_oid(t.id), t.name.clone(), Obj::Acl(AclObject::Relation(db.clone(), t.name.clone()))));
        }
        for view in &self.catalog.views(&db) {
            v.push((view_oid(view), view.name.clone(), Obj::Acl(AclObject::Relation(db.clone(), view.name.clone()))));
        }
        v
    }

    fn database_objects(&self) -> Vec<(i64, String, Obj)> {
        self.catalog.database_slots().into_iter().map(|(d, n)| (database_oid(n), d.clone(), Obj::Acl(AclObject::Database(d)))).collect()
    }

    fn schema_objects(&self) -> Vec<(i64, String, Obj)> {
        let mut v = vec![
            (11, "pg_catalog".to_string(), Obj::Schema(None)),
            (2200, "public".to_string(), Obj::Schema(Some(self.database.clone()))),
            (13000, "information_schema".to_string(), Obj::Schema(None)),
        ];
        for (d, n) in self.catalog.database_slots().into_iter().filter(|(d, _)| !is_reserved_schema(d)) {
            v.push((database_namespace_oid(n), d.clone(), Obj::Schema(Some(d))));
        }
        v
    }

    fn role_objects(&self) -> Vec<(i64, String, Obj)> {
        self.catalog.roles().into_iter().map(|r| (r.oid as i64, r.name.clone(), Obj::Role(r.name))).collect()
    }

    /// Does `user` hold any of `privs` on `obj`?
    fn holds(&self, user: &str, obj: &Obj, privs: &[(String, bool)]) -> bool {
        let cat = self.catalog;
        let su = cat.is_superuser(user);
        privs.iter().any(|(name, grant)| match obj {
            Obj::Acl(o) => {
                let (p, g) = cat.privileges(user, o);
                let bit = acl::privilege_bit(name).unwrap_or(0);
                (if *grant { g } else { p }) & bit != 0
            }
            Obj::System(n) => name == "SELECT" && !*grant && (su || n != "pg_authid") || su,
            Obj::Schema(db) => match (name.as_str(), db) {
                ("USAGE", _) => !*grant || su,
                ("CREATE", Some(d)) => {
                    let (p, g) = cat.privileges(user, &AclObject::Database(d.clone()));
                    (if *grant { g } else { p }) & acl::CREATE != 0
                }
                _ => su,
            },
            Obj::Role(role) => match name.as_str() {
                "MEMBER" => su || cat.role_closure(user, false).contains(role),
                "USAGE" => su || cat.role_closure(user, true).contains(role),
                _ => su,
            },
        })
    }

    /// `has_*_privilege` and `pg_has_role`, or None for other functions.
    pub(super) fn bind_privilege_function(
        &self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
        agg: Option<&AggCollector>,
    ) -> Result<Option<Expr>> {
        if name == "ssl_is_used" && args.is_empty() {
            // sslinfo's: is this session's connection encrypted?
            let used = self.ctx.activity.rows().iter().any(|r| r.pid == self.ctx.pid && r.ssl.is_some());
            return Ok(Some(Expr::lit(Value::Bool(used), SqlType::Bool)));
        }
        if name == "pg_get_userbyid" && args.len() == 1 {
            // A role's name by OID (PostgreSQL prints unknown ones so).
            let roles = self.role_objects();
            return Ok(Some(match self.privilege_arg(&args[0], scope, agg)? {
                Arg::Const(Value::Null) => Expr::lit(Value::Null, SqlType::Text),
                Arg::Const(v) => {
                    let oid = match &v {
                        Value::Int(i) => *i,
                        other => crate::types::format_value(other).trim().parse().unwrap_or(0),
                    };
                    let name = roles
                        .iter()
                        .find(|(o, _, _)| *o == oid)
                        .map(|(_, n, _)| n.clone())
                        .unwrap_or_else(|| format!("unknown (OID={oid})"));
                    Expr::lit(Value::Text(name), SqlType::Text)
                }
                Arg::Dyn(e) => {
                    let key = Expr::Cast { expr: Box::new(e), ty: SqlType::Int8 };
                    let whens = roles
                        .iter()
                        .map(|(oid, n, _)| (Expr::lit(Value::Int(*oid), SqlType::Int8), Expr::lit(Value::Text(n.clone()), SqlType::Text)))
                        .collect();
                    Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Text }
                }
            }));
        }
        const TABLE: &[&str] = &["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"];
        let (objects, allowed, with_column, what): (fn(&Self) -> Vec<(i64, String, Obj)>, &[&str], bool, &str) = match name {
            "has_table_privilege" => (Self::relation_objects, TABLE, false, "relation"),
            "has_any_column_privilege" => (Self::relation_objects, &["SELECT", "INSERT", "UPDATE", "REFERENCES"], false, "relation"),
            "has_column_privilege" => (Self::relation_objects, &["SELECT", "INSERT", "UPDATE", "REFERENCES"], true, "relation"),
            "has_database_privilege" => (Self::database_objects, &["CREATE", "CONNECT", "TEMPORARY", "TEMP"], false, "database"),
            "has_schema_privilege" => (Self::schema_objects, &["CREATE", "USAGE"], false, "schema"),
            "pg_has_role" => (Self::role_objects, &["MEMBER", "USAGE", "SET"], false, "role"),
            _ => return Ok(None),
        };
        let n = args.len();
        let base = if with_column { 3 } else { 2 };
        if n != base && n != base + 1 {
            bail!(UndefinedFunction, "function {name} with {n} arguments does not exist");
        }
        let explicit_user = n == base + 1;
        let user_arg = if explicit_user { Some(self.privilege_arg(&args[0], scope, agg)?) } else { None };
        let obj_ast = &args[usize::from(explicit_user)];
        let priv_arg = self.privilege_arg(&args[n - 1], scope, agg)?;
        let privs = match priv_arg {
            Arg::Const(Value::Null) => return Ok(Some(Expr::lit(Value::Null, SqlType::Bool))),
            Arg::Const(Value::Text(t)) => parse_privileges(&t, allowed)?,
            _ => bail!(FeatureNotSupported, "the privilege argument of {name} must be a constant"),
        };
        let privs: Vec<(String, bool)> = privs.into_iter().map(|(p, g)| (if p == "TEMP" { "TEMPORARY".into() } else { p }, g)).collect();
        // A relation given by name: regclass's resolution (42P01 if missing).
        let obj_arg = if what == "relation" {
            let e = self.relation_arg(obj_ast, scope, agg)?;
            match e {
                Expr::Literal { value, .. } => Arg::Const(value),
                e => Arg::Dyn(e),
            }
        } else {
            self.privilege_arg(obj_ast, scope, agg)?
        };
        if with_column {
            if let (Arg::Const(Value::Text(col)), Arg::Const(Value::Int(oid))) = (self.privilege_arg(&args[n - 2], scope, agg)?, &obj_arg) {
                if let Some((_, tname, Obj::Acl(AclObject::Relation(db, t)))) = objects(self).into_iter().find(|(o, _, _)| o == oid) {
                    let has = self.catalog.table(&db, &t).map(|d| d.column_index(&col).is_some()).unwrap_or(true);
                    if !has {
                        bail!(UndefinedColumn, "column \"{col}\" of relation \"{tname}\" does not exist");
                    }
                }
            }
        }
        let objs = objects(self);
        let roles = self.role_objects();
        let missing = |kind: &str, n: &str| match kind {
            "database" => err!(UndefinedDatabase, "database \"{n}\" does not exist"),
            "schema" => err!(UndefinedSchema, "schema \"{n}\" does not exist"),
            _ => err!(UndefinedObject, "role \"{n}\" does not exist"),
        };
        // Resolve a constant to an entry (None: an unknown OID → NULL).
        let lookup = |list: &[(i64, String, Obj)], v: &Value, kind: &str| -> Result<Option<Obj>> {
            Ok(match v {
                Value::Int(oid) => list.iter().find(|(o, _, _)| o == oid).map(|(_, _, x)| x.clone()),
                Value::Text(s) => {
                    let key = if kind == "role" { s.clone() } else { s.trim().to_string() };
                    Some(list.iter().find(|(_, n, _)| *n == key).map(|(_, _, x)| x.clone()).ok_or_else(|| missing(kind, s))?)
                }
                _ => None,
            })
        };
        let user_key = |v: &Value| -> Result<Option<String>> {
            Ok(match lookup(&roles, v, "role")? {
                Some(Obj::Role(r)) => Some(r),
                _ => None,
            })
        };
        // The answer for one user over the object argument.
        let for_user = |user: Option<String>| -> Result<Expr> {
            let Some(user) = user else { return Ok(Expr::lit(Value::Null, SqlType::Bool)) };
            Ok(match &obj_arg {
                Arg::Const(Value::Null) => Expr::lit(Value::Null, SqlType::Bool),
                Arg::Const(v) => match lookup(&objs, v, what)? {
                    Some(o) => Expr::lit(Value::Bool(self.holds(&user, &o, &privs)), SqlType::Bool),
                    None => Expr::lit(Value::Null, SqlType::Bool),
                },
                Arg::Dyn(e) => {
                    let by_oid = e.ty().is_integer();
                    let key = if by_oid {
                        Expr::Cast { expr: Box::new(e.clone()), ty: SqlType::Int8 }
                    } else {
                        Expr::Cast { expr: Box::new(e.clone()), ty: SqlType::Text }
                    };
                    let whens = objs
                        .iter()
                        .map(|(oid, n, o)| {
                            let k = if by_oid {
                                Expr::lit(Value::Int(*oid), SqlType::Int8)
                            } else {
                                Expr::lit(Value::Text(n.clone()), SqlType::Text)
                            };
                            (k, Expr::lit(Value::Bool(self.holds(&user, o, &privs)), SqlType::Bool))
                        })
                        .collect();
                    Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Bool }
                }
            })
        };
        Ok(Some(match user_arg {
            None => for_user(Some(self.ctx.user.clone()))?,
            Some(Arg::Const(Value::Null)) => Expr::lit(Value::Null, SqlType::Bool),
            Some(Arg::Const(v)) => for_user(user_key(&v)?)?,
            Some(Arg::Dyn(e)) => {
                let by_oid = e.ty().is_integer();
                let key = Expr::Cast { expr: Box::new(e), ty: if by_oid { SqlType::Int8 } else { SqlType::Text } };
                let mut whens = Vec::new();
                for (oid, n, _) in &roles {
                    let k =
                        if by_oid { Expr::lit(Value::Int(*oid), SqlType::Int8) } else { Expr::lit(Value::Text(n.clone()), SqlType::Text) };
                    whens.push((k, for_user(Some(n.clone()))?));
                }
                Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Bool }
            }
        }))
    }
}
