//! PostgreSQL's object-identifier alias types (`regclass`, `regtype`,
//! `regnamespace`, `regproc`): the name ↔ OID tables, built from the catalog
//! at plan time, and the binding of casts to them.
//!
//! A reg* value is an OID that prints as a name. Weir has no column type for
//! that, so the binder picks the representation from where the cast sits:
//! compared with (or cast to) an integer it is the OID (`c.oid =
//! 'pg_class'::regclass`), everywhere else the name (`oid::regclass`,
//! `'int4'::regtype::text`). Literals resolve at plan time (an unknown name
//! fails like PostgreSQL: 42P01 / 42704 / 3F000 / 42883); columns and
//! parameters go through a CASE over the table.
//!
//! May import `exec`, `catalog`, `types`, `error`; never `sql` or `server`.

use sqlparser::ast;

use super::bind::AggCollector;
use super::system::{
    database_namespace_oid, database_oid, index_oid, is_reserved_schema, pk_columns, pk_constraintdef, pk_indexdef, quote_ident, table_oid,
    user_index_oid, user_indexdef, view_oid, SYSTEM_RELATIONS,
};
use super::{Planner, Scope};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::types::{SqlType, Value};
use crate::{bail, err};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegKind {
    Class,
    Type,
    Namespace,
    Proc,
}

impl RegKind {
    fn type_name(self) -> &'static str {
        match self {
            RegKind::Class => "regclass",
            RegKind::Type => "regtype",
            RegKind::Namespace => "regnamespace",
            RegKind::Proc => "regproc",
        }
    }
}

/// The reg* kind a cast target names, if any.
pub fn reg_kind(dt: &ast::DataType) -> Option<RegKind> {
    match dt {
        ast::DataType::Regclass => Some(RegKind::Class),
        ast::DataType::Custom(name, _) => {
            let n = name.0.last().map(|p| p.to_string()).unwrap_or_default().to_lowercase();
            match n.trim_matches('"') {
                "regclass" => Some(RegKind::Class),
                "regtype" => Some(RegKind::Type),
                "regnamespace" => Some(RegKind::Namespace),
                "regproc" | "regprocedure" => Some(RegKind::Proc),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Is `e` (under parentheses) a cast to a reg* type, or a `to_reg*(x)`
/// call (lenient: NULL for a missing name)? Gives x, the kind, lenient.
pub fn reg_cast(e: &ast::Expr) -> Option<(&ast::Expr, RegKind, bool)> {
    match e {
        ast::Expr::Nested(inner) => reg_cast(inner),
        ast::Expr::Cast { expr, data_type, .. } => reg_kind(data_type).map(|k| (expr.as_ref(), k, false)),
        ast::Expr::Function(f) if f.over.is_none() => {
            let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
            let kind = match name.as_str() {
                "to_regclass" => RegKind::Class,
                "to_regtype" => RegKind::Type,
                "to_regnamespace" => RegKind::Namespace,
                _ => return None,
            };
            match &f.args {
                ast::FunctionArguments::List(l) if l.args.len() == 1 && l.clauses.is_empty() => match &l.args[0] {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some((x, kind, true)),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// Built-in types: OID, the name PostgreSQL prints, and the other names it
/// accepts on input.
const TYPES: &[(i64, &str, &[&str])] = &[
    (16, "boolean", &["bool"]),
    (17, "bytea", &[]),
    (18, "\"char\"", &["char"]),
    (19, "name", &[]),
    (20, "bigint", &["int8"]),
    (21, "smallint", &["int2"]),
    (23, "integer", &["int4", "int"]),
    (25, "text", &[]),
    (26, "oid", &[]),
    (700, "real", &["float4"]),
    (701, "double precision", &["float8", "float"]),
    (1043, "character varying", &["varchar"]),
    (1082, "date", &[]),
    (1114, "timestamp without time zone", &["timestamp"]),
    (1184, "timestamp with time zone", &["timestamptz"]),
    (1186, "interval", &[]),
    (1083, "time without time zone", &["time"]),
    (1266, "time with time zone", &["timetz"]),
    (1700, "numeric", &["decimal"]),
    (2205, "regclass", &[]),
    (2206, "regtype", &[]),
    (4089, "regnamespace", &[]),
    (24, "regproc", &[]),
];

/// One object: OID, printed name, accepted input names (lowercase).
struct Entry {
    oid: i64,
    name: String,
    inputs: Vec<String>,
}

/// An input name as PostgreSQL reads it: the last dotted part (schemas are
/// not separate namespaces here), unquoted verbatim or folded to lowercase.
fn normalize(input: &str, kind: RegKind) -> String {
    let s = input.trim();
    if kind == RegKind::Type {
        // Type names have spaces ("double precision") and modifiers.
        let s = s.strip_prefix("pg_catalog.").unwrap_or(s);
        let s = s.split('(').next().unwrap_or(s).trim();
        return s.to_lowercase();
    }
    let last = split_dotted(s).pop().unwrap_or_default();
    last
}

/// A dotted name's parts as regclass input reads them (quoted parts
/// verbatim, the others folded to lowercase).
pub fn split_dotted(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c if quoted => cur.push(c),
            c => cur.extend(c.to_lowercase()),
        }
    }
    parts.push(cur);
    parts
}

impl Planner<'_> {
    fn reg_entries(&self, kind: RegKind) -> Vec<Entry> {
        let entry = |oid: i64, name: &str| Entry { oid, name: quote_ident(name), inputs: vec![name.to_string()] };
        match kind {
            RegKind::Class => {
                let mut v: Vec<Entry> = SYSTEM_RELATIONS.iter().map(|(oid, n)| entry(*oid, n)).collect();
                let home = self.home.clone().unwrap_or_else(|| self.database.clone());
                // The relations of search_path's databases, in its order (the
                // first match wins), then the planner's own.
                for db in self.search_databases() {
                    let start = v.len();
                    for t in self.catalog.tables(&db) {
                        v.push(entry(table_oid(t.id), &t.name));
                        if pk_columns(&t).is_some() {
                            v.push(entry(index_oid(t.id), &format!("{}_pkey", t.name)));
                        }
                    }
                    for idx in &self.catalog.database_indexes(&db) {
                        v.push(entry(user_index_oid(idx), &idx.name));
                    }
                    for view in &self.catalog.views(&db) {
                        v.push(entry(view_oid(view), &view.name));
                    }
                    for seq in &self.catalog.sequences(&db) {
                        v.push(entry(table_oid(seq.id), &seq.name));
                    }
                    // A user relation's schema-qualified text (pg_get_serial_sequence
                    // answers `public.s`) reaches it from a column too (literals drop
                    // the qualifier in `normalize`).
                    let schema = if db == home { "public".to_string() } else { quote_ident(&db) };
                    for e in &mut v[start..] {
                        let qualified = format!("{schema}.{}", e.name);
                        e.inputs.push(qualified);
                    }
                }
                // The session's temporary relations, under the names it wrote,
                // first: they shadow the permanent ones (pg_temp leads the path).
                let temps: Vec<Entry> = self
                    .temp_names
                    .iter()
                    .filter_map(|(user, stored)| {
                        let e = v.iter().find(|e| e.inputs.first() == Some(stored))?;
                        Some(Entry { oid: e.oid, name: quote_ident(user), inputs: vec![user.clone(), format!("pg_temp.{user}")] })
                    })
                    .collect();
                v.splice(0..0, temps);
                v
            }
            RegKind::Type => TYPES
                .iter()
                .map(|(oid, name, alias)| Entry {
                    oid: *oid,
                    name: name.to_string(),
                    inputs: std::iter::once(name.trim_matches('"')).chain(alias.iter().copied()).map(str::to_string).collect(),
                })
                .collect(),
            RegKind::Namespace => {
                let mut v = vec![entry(11, "pg_catalog"), entry(2200, "public"), entry(13000, "information_schema")];
                for (d, n) in self.catalog.database_slots().iter().filter(|(d, _)| !is_reserved_schema(d)) {
                    v.push(entry(database_namespace_oid(*n), d));
                }
                v
            }
            RegKind::Proc => Vec::new(),
        }
    }

    fn reg_missing(&self, kind: RegKind, name: &str) -> crate::error::WeirError {
        match kind {
            RegKind::Class => err!(UndefinedTable, "relation \"{name}\" does not exist"),
            RegKind::Type => err!(UndefinedObject, "type \"{name}\" does not exist"),
            RegKind::Namespace => err!(UndefinedSchema, "schema \"{name}\" does not exist"),
            RegKind::Proc => err!(UndefinedFunction, "function \"{name}\" does not exist"),
        }
    }

    /// `to_reg*(inner)`: as `bind_reg_cast`, NULL for a missing name.
    pub fn bind_reg_lenient(&self, inner: Expr, kind: RegKind, want_oid: bool) -> Result<Expr> {
        use crate::error::ErrorKind as K;
        match self.bind_reg_cast(inner, kind, want_oid) {
            Err(e) if matches!(e.kind, K::UndefinedTable | K::UndefinedObject | K::UndefinedSchema) => {
                Ok(Expr::lit(Value::Null, if want_oid { SqlType::Int8 } else { SqlType::Text }))
            }
            other => other,
        }
    }

    /// Bind `inner::reg*`: the OID when `want_oid`, else the printed name.
    pub fn bind_reg_cast(&self, inner: Expr, kind: RegKind, want_oid: bool) -> Result<Expr> {
        if kind == RegKind::Proc {
            // Weir has no pg_proc: functions are named, not numbered, so a
            // regproc is its name both ways (pg_type.typinput holds names).
            return Ok(match inner {
                Expr::Literal { value: Value::Text(s), .. } => Expr::lit(Value::Text(normalize(&s, kind)), SqlType::Text),
                e if e.ty().is_text() => e,
                e => Expr::Cast { expr: Box::new(e), ty: SqlType::Text },
            });
        }
        let entries = self.reg_entries(kind);
        let out_ty = if want_oid { SqlType::Int8 } else { SqlType::Text };
        let from = inner.ty();
        // A literal: resolved now.
        if let Expr::Literal { value, .. } = &inner {
            return Ok(match value {
                Value::Null => Expr::lit(Value::Null, out_ty),
                Value::Int(oid) => match (want_oid, entries.iter().find(|e| e.oid == *oid)) {
                    (true, _) => Expr::lit(Value::Int(*oid), out_ty),
                    (false, Some(e)) => Expr::lit(Value::Text(e.name.clone()), out_ty),
                    (false, None) => Expr::lit(Value::Text(oid.to_string()), out_ty),
                },
                Value::Text(s) => {
                    if let Ok(oid) = s.trim().parse::<i64>() {
                        return self.bind_reg_cast(Expr::lit(Value::Int(oid), SqlType::Int8), kind, want_oid);
                    }
                    let n = normalize(s, kind);
                    let e = entries.iter().find(|e| e.inputs.iter().any(|i| *i == n)).ok_or_else(|| self.reg_missing(kind, &n))?;
                    if want_oid {
                        Expr::lit(Value::Int(e.oid), out_ty)
                    } else {
                        Expr::lit(Value::Text(e.name.clone()), out_ty)
                    }
                }
                _ => bail!(DatatypeMismatch, "cannot cast type {} to {}", from, kind.type_name()),
            });
        }
        // A column or parameter: a CASE over the table, built now.
        if from.is_integer() || (from == SqlType::Unknown && want_oid && !matches!(inner, Expr::Param { .. })) {
            if want_oid {
                return Ok(if from == SqlType::Int8 { inner } else { Expr::Cast { expr: Box::new(inner), ty: SqlType::Int8 } });
            }
            let key = Expr::Cast { expr: Box::new(inner.clone()), ty: SqlType::Int8 };
            let whens = entries
                .iter()
                .map(|e| (Expr::lit(Value::Int(e.oid), SqlType::Int8), Expr::lit(Value::Text(e.name.clone()), SqlType::Text)))
                .collect();
            let fallback = Expr::Cast { expr: Box::new(inner), ty: SqlType::Text };
            return Ok(Expr::Case { operand: Some(Box::new(key)), whens, else_expr: Some(Box::new(fallback)), ty: SqlType::Text });
        }
        if from.is_text() || matches!(inner, Expr::Param { .. }) {
            let key = match inner {
                Expr::Param { index, .. } => Expr::Param { index, ty: SqlType::Text },
                e if e.ty() == SqlType::Text => e,
                e => Expr::Cast { expr: Box::new(e), ty: SqlType::Text },
            };
            let mut whens = Vec::new();
            for e in &entries {
                let v = if want_oid { Value::Int(e.oid) } else { Value::Text(e.name.clone()) };
                for i in &e.inputs {
                    whens.push((Expr::lit(Value::Text(i.clone()), SqlType::Text), Expr::lit(v.clone(), out_ty)));
                }
            }
            return Ok(Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: out_ty });
        }
        bail!(DatatypeMismatch, "cannot cast type {} to {}", from, kind.type_name())
    }
}

impl Planner<'_> {
    /// An argument naming a relation (`'t'`, `'t'::regclass`, an OID) as its OID.
    pub(super) fn relation_arg(&self, a: &ast::Expr, scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        let e = self.bind_reg_operand(a, scope, agg, true)?;
        self.infer_param(&e, SqlType::Text);
        if e.ty().is_text() || matches!(e, Expr::Param { ty: SqlType::Text, .. }) {
            return self.bind_reg_cast(e, RegKind::Class, true);
        }
        Ok(if e.ty() == SqlType::Int8 { e } else { Expr::Cast { expr: Box::new(e), ty: SqlType::Int8 } })
    }

    /// Catalog functions answered from the catalog and region statistics at
    /// plan time, as a CASE over the objects' OIDs: the index and constraint
    /// definitions of primary keys, view definitions, and sizes in bytes.
    pub(super) fn bind_catalog_function(
        &self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
        agg: Option<&AggCollector>,
    ) -> Result<Option<Expr>> {
        let db = self.database.clone();
        let case = |key: Expr, arms: Vec<(i64, Value)>, ty: SqlType| Expr::Case {
            operand: Some(Box::new(key)),
            whens: arms.into_iter().map(|(oid, v)| (Expr::lit(Value::Int(oid), SqlType::Int8), Expr::lit(v, ty))).collect(),
            else_expr: None,
            ty,
        };
        let table_bytes = |t: &crate::catalog::TableDef| -> Result<(i64, i64)> {
            let (mut data, mut wal) = (0i64, 0i64);
            for r in self.regions(t)? {
                let st = r.stats();
                data += st.sst_bytes as i64;
                wal += st.wal_bytes as i64;
            }
            Ok((data, wal))
        };
        Ok(Some(match (name, args) {
            // pg_get_indexdef(index, column, pretty): column k's name (0: the whole definition).
            ("pg_get_indexdef", [a, k, _]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let k = super::coerce(self.bind_expr(k, scope, agg)?, SqlType::Int8)?;
                let whens = self
                    .catalog
                    .tables(&db)
                    .iter()
                    .filter_map(|t| {
                        let cols = pk_columns(t)?;
                        let mut arms =
                            vec![(Expr::lit(Value::Int(0), SqlType::Int8), Expr::lit(Value::Text(pk_indexdef(t, &cols)), SqlType::Text))];
                        for (j, c) in cols.iter().enumerate() {
                            arms.push((
                                Expr::lit(Value::Int(j as i64 + 1), SqlType::Int8),
                                Expr::lit(Value::Text(t.columns[*c].name.clone()), SqlType::Text),
                            ));
                        }
                        let inner = Expr::Case { operand: Some(Box::new(k.clone())), whens: arms, else_expr: None, ty: SqlType::Text };
                        Some((Expr::lit(Value::Int(index_oid(t.id)), SqlType::Int8), inner))
                    })
                    .chain(self.catalog.database_indexes(&db).iter().map(|idx| {
                        let mut arms =
                            vec![(Expr::lit(Value::Int(0), SqlType::Int8), Expr::lit(Value::Text(user_indexdef(idx)), SqlType::Text))];
                        for (j, c) in idx.columns.iter().enumerate() {
                            arms.push((
                                Expr::lit(Value::Int(j as i64 + 1), SqlType::Int8),
                                Expr::lit(Value::Text(c.clone()), SqlType::Text),
                            ));
                        }
                        let inner = Expr::Case { operand: Some(Box::new(k.clone())), whens: arms, else_expr: None, ty: SqlType::Text };
                        (Expr::lit(Value::Int(user_index_oid(idx)), SqlType::Int8), inner)
                    }))
                    .collect();
                Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Text }
            }
            ("pg_get_indexdef" | "pg_get_constraintdef", [a, ..]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let mut arms: Vec<(i64, Value)> = self
                    .catalog
                    .tables(&db)
                    .iter()
                    .filter_map(|t| {
                        let cols = pk_columns(t)?;
                        let def = if name == "pg_get_indexdef" { pk_indexdef(t, &cols) } else { pk_constraintdef(t, &cols) };
                        Some((index_oid(t.id), Value::Text(def)))
                    })
                    .collect();
                if name == "pg_get_indexdef" {
                    for idx in &self.catalog.database_indexes(&db) {
                        arms.push((user_index_oid(idx), Value::Text(user_indexdef(idx))));
                    }
                }
                case(key, arms, SqlType::Text)
            }
            // The sequence a column owns (SERIAL, identity), schema-qualified.
            ("pg_get_serial_sequence", [a, c]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let col = super::coerce(self.bind_expr(c, scope, agg)?, SqlType::Text)?;
                let mut by_table: std::collections::BTreeMap<i64, Vec<(Expr, Expr)>> = Default::default();
                for seq in self.catalog.sequences(&db) {
                    let Some(o) = &seq.owned_by else { continue };
                    let Some(t) = self.catalog.table(&db, &o.table) else { continue };
                    let name = format!("public.{}", quote_ident(&seq.name));
                    by_table
                        .entry(table_oid(t.id))
                        .or_default()
                        .push((Expr::lit(Value::Text(o.column.clone()), SqlType::Text), Expr::lit(Value::Text(name), SqlType::Text)));
                }
                let whens = by_table
                    .into_iter()
                    .map(|(oid, arms)| {
                        let inner = Expr::Case { operand: Some(Box::new(col.clone())), whens: arms, else_expr: None, ty: SqlType::Text };
                        (Expr::lit(Value::Int(oid), SqlType::Int8), inner)
                    })
                    .collect();
                Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Text }
            }
            // pg_table_is_visible(oid): false for the relations of schemas off
            // search_path and for other sessions' temporary ones; true else.
            ("pg_table_is_visible", [a]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let path = self.search_databases();
                let mut hidden = Vec::new();
                for d in self.catalog.databases() {
                    let on_path = path.contains(&d);
                    let off = |name: &str| {
                        !on_path || (name.starts_with("pg_temp_") && !self.temp_names.iter().any(|(_, stored)| stored == name))
                    };
                    for t in self.catalog.tables(&d).into_iter().filter(|t| off(&t.name)) {
                        hidden.push(table_oid(t.id));
                        hidden.push(index_oid(t.id));
                    }
                    hidden.extend(self.catalog.database_indexes(&d).iter().filter(|i| off(&i.table)).map(user_index_oid));
                    hidden.extend(self.catalog.views(&d).iter().filter(|v| off(&v.name)).map(view_oid));
                    hidden.extend(self.catalog.sequences(&d).iter().filter(|q| off(&q.name)).map(|q| table_oid(q.id)));
                }
                let whens = hidden
                    .into_iter()
                    .map(|oid| (Expr::lit(Value::Int(oid), SqlType::Int8), Expr::lit(Value::Bool(false), SqlType::Bool)))
                    .collect();
                let otherwise = Expr::lit(Value::Bool(true), SqlType::Bool);
                Expr::Case { operand: Some(Box::new(key)), whens, else_expr: Some(Box::new(otherwise)), ty: SqlType::Bool }
            }
            // COMMENT ON's texts (`catalog/comment.rs`) by relation OID, and
            // by column number within it.
            ("obj_description", [a, ..]) => {
                let mut arms = Vec::new();
                for d in self.search_databases() {
                    for c in self.catalog.comments(&d).into_iter().filter(|c| c.column.is_none()) {
                        if let Some(oid) = self.relation_oid(&d, &c.relation) {
                            arms.push((oid, Value::Text(c.text)));
                        }
                    }
                }
                let key = self.relation_arg(a, scope, agg)?;
                case(key, arms, SqlType::Text)
            }
            ("col_description", [a, n]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let n = super::coerce(self.bind_expr(n, scope, agg)?, SqlType::Int8)?;
                let mut by_rel: std::collections::BTreeMap<i64, Vec<(Expr, Expr)>> = Default::default();
                for d in self.search_databases() {
                    for c in self.catalog.comments(&d) {
                        let Some(col) = &c.column else { continue };
                        let Some(oid) = self.relation_oid(&d, &c.relation) else { continue };
                        let columns: Vec<String> = match (self.catalog.table(&d, &c.relation), self.catalog.view(&d, &c.relation)) {
                            (Some(t), _) => t.columns.iter().map(|c| c.name.clone()).collect(),
                            (None, Some(v)) => v.columns,
                            (None, None) => continue,
                        };
                        let Some(i) = columns.iter().position(|x| x == col) else { continue };
                        by_rel
                            .entry(oid)
                            .or_default()
                            .push((Expr::lit(Value::Int(i as i64 + 1), SqlType::Int8), Expr::lit(Value::Text(c.text), SqlType::Text)));
                    }
                }
                let whens = by_rel
                    .into_iter()
                    .map(|(oid, arms)| {
                        let inner = Expr::Case { operand: Some(Box::new(n.clone())), whens: arms, else_expr: None, ty: SqlType::Text };
                        (Expr::lit(Value::Int(oid), SqlType::Int8), inner)
                    })
                    .collect();
                Expr::Case { operand: Some(Box::new(key)), whens, else_expr: None, ty: SqlType::Text }
            }
            ("pg_get_viewdef", [a, rest @ ..]) => {
                let key = self.relation_arg(a, scope, agg)?;
                // pretty: a constant true (a non-constant flag shows the plain form).
                let pretty = match rest.first() {
                    Some(p) => matches!(
                        super::rewrite::fold::fold_expr(&super::coerce(self.bind_expr(p, scope, agg)?, SqlType::Bool)?, &self.ctx),
                        Expr::Literal { value: Value::Bool(true), .. }
                    ),
                    None => false,
                };
                let arms = self
                    .search_databases()
                    .iter()
                    .flat_map(|d| self.catalog.views(d))
                    .map(|v| (view_oid(&v), Value::Text(super::viewdef::view_definition(&v, pretty))))
                    .collect();
                case(key, arms, SqlType::Text)
            }
            ("pg_relation_size" | "pg_table_size" | "pg_total_relation_size" | "pg_indexes_size", [a, ..]) => {
                let key = self.relation_arg(a, scope, agg)?;
                let mut arms = Vec::new();
                for t in self.catalog.tables(&db) {
                    let (data, wal) = table_bytes(&t)?;
                    let v = match name {
                        "pg_relation_size" => data,
                        "pg_indexes_size" => 0,
                        _ => data + wal,
                    };
                    arms.push((table_oid(t.id), Value::Int(v)));
                    if pk_columns(&t).is_some() {
                        arms.push((index_oid(t.id), Value::Int(0)));
                    }
                }
                for v in &self.catalog.views(&db) {
                    arms.push((view_oid(v), Value::Int(0)));
                }
                for idx in &self.catalog.database_indexes(&db) {
                    arms.push((user_index_oid(idx), Value::Int(0)));
                }
                case(key, arms, SqlType::Int8)
            }
            ("pg_database_size", [a]) => {
                let arg = self.bind_expr(a, scope, agg)?;
                self.infer_param(&arg, SqlType::Text);
                let mut by_name = Vec::new();
                let mut by_oid = Vec::new();
                for (d, n) in &self.catalog.database_slots() {
                    let mut total = 0;
                    for t in self.catalog.tables(d) {
                        let (data, wal) = table_bytes(&t)?;
                        total += data + wal;
                    }
                    by_name.push((Expr::lit(Value::Text(d.clone()), SqlType::Text), Expr::lit(Value::Int(total), SqlType::Int8)));
                    by_oid.push((database_oid(*n), Value::Int(total)));
                }
                if arg.ty().is_integer() {
                    let key = if arg.ty() == SqlType::Int8 { arg } else { Expr::Cast { expr: Box::new(arg), ty: SqlType::Int8 } };
                    case(key, by_oid, SqlType::Int8)
                } else {
                    let key = if arg.ty() == SqlType::Text { arg } else { Expr::Cast { expr: Box::new(arg), ty: SqlType::Text } };
                    Expr::Case { operand: Some(Box::new(key)), whens: by_name, else_expr: None, ty: SqlType::Int8 }
                }
            }
            // The first schema of search_path that exists (NULL if none).
            ("current_schema", []) => {
                let first = self.search_path_schemas().into_iter().next();
                Expr::lit(first.map_or(Value::Null, Value::Text), SqlType::Text)
            }
            // search_path's existing schemas as a name[]; with true,
            // pg_catalog (searched implicitly) first unless listed.
            ("current_schemas", [implicit]) => {
                let implicit = super::coerce(self.bind_expr(implicit, scope, agg)?, SqlType::Bool)?;
                let explicit = self.search_path_schemas();
                let mut all = explicit.clone();
                if !all.iter().any(|s| s == "pg_catalog") {
                    all.insert(0, "pg_catalog".to_string());
                }
                let array = |v: Vec<String>| Expr::lit(Value::Text(format!("{{{}}}", v.join(","))), SqlType::Text);
                Expr::Case {
                    operand: Some(Box::new(implicit)),
                    whens: vec![(Expr::lit(Value::Bool(true), SqlType::Bool), array(all))],
                    else_expr: Some(Box::new(array(explicit))),
                    ty: SqlType::Text,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// The schemas of the session's search_path that exist, in order
    /// (quoted names keep their case). `"$user"` names none: weir has no
    /// per-user schemas (a database named like the user is not one).
    /// The databases relation names are found in: `search_path`'s (`public`
    /// is the connection's), then the planner's own if the path lacks it.
    /// A table's or view's OID.
    fn relation_oid(&self, database: &str, name: &str) -> Option<i64> {
        match (self.catalog.table(database, name), self.catalog.view(database, name)) {
            (Some(t), _) => Some(table_oid(t.id)),
            (None, Some(v)) => Some(view_oid(&v)),
            (None, None) => None,
        }
    }

    pub(super) fn search_databases(&self) -> Vec<String> {
        let home = self.home.clone().unwrap_or_else(|| self.database.clone());
        let mut out: Vec<String> = Vec::new();
        for s in self.search_path_schemas() {
            let db = match s.as_str() {
                "public" => home.clone(),
                s if super::system::is_reserved_schema(s) => continue,
                _ => s,
            };
            if !out.contains(&db) {
                out.push(db);
            }
        }
        if !out.contains(&self.database) {
            out.push(self.database.clone());
        }
        out
    }

    pub fn search_path_schemas(&self) -> Vec<String> {
        let path = self.ctx.settings.get("search_path").map_or("\"$user\", public", |v| v.as_str());
        let databases = self.catalog.databases();
        path.split(',')
            .map(|item| {
                let item = item.trim().trim_matches('\'');
                match item.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                    Some("$user") => String::new(),
                    Some(quoted) => quoted.to_string(),
                    None => item.to_lowercase(),
                }
            })
            .filter(|name| super::system::is_reserved_schema(name) || databases.iter().any(|d| d == name))
            .collect()
    }
}
