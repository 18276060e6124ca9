//! User-defined types in type names and casts (`CREATE TYPE`, `CREATE
//! DOMAIN`; definitions in `catalog/user_type.rs`).
//!
//! A domain's values are its base type's: a type name naming a domain
//! resolves to the base type, and a cast to the domain is a cast to the
//! base type whose result must pass the domain's NOT NULL and CHECK
//! constraints (`domain_check`, 23502 / 23514). Composite and enum values
//! are carried as text (a record's text form `(1,x)`, an enum's label): a
//! cast to a composite type casts `ROW(…)`'s fields to the field types, a
//! cast to an enum checks the label (22P02); `enum_range(NULL::e)` is the
//! array of e's labels. A shell type names no values yet.
//!
//! Lives in the planner; reads the catalog.

use sqlparser::ast;

use super::bind::AggCollector;
use super::{coerce, Planner, Scope};
use crate::catalog::operator::{FunctionRef, TypeRef};
use crate::catalog::{Catalog, FunctionDef, TypeDef, TypeKind};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::types::{Elem, SqlType, Value};
use crate::{bail, err};

/// The user-defined type a type name names in `database` (unqualified,
/// `public`, or another database as schema).
pub fn user_type(catalog: &Catalog, database: &str, dt: &ast::DataType) -> Option<TypeDef> {
    let ast::DataType::Custom(name, mods) = dt else { return None };
    if !mods.is_empty() {
        return None;
    }
    let (schema, n) = super::object_name(name).ok()?;
    let db = match schema.as_deref() {
        None | Some("public") | Some("pg_temp") => database,
        Some(db) => db,
    };
    named_type(catalog, db, &n)
}

/// A user-defined type by name, or a table's row type: as in PostgreSQL, every
/// table has a composite type of its name whose fields are its columns.
pub fn named_type(catalog: &Catalog, database: &str, name: &str) -> Option<TypeDef> {
    if let Some(t) = catalog.user_type(database, name) {
        return Some(t);
    }
    let t = catalog.table(database, name)?;
    let fields = t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
    Some(TypeDef { id: t.id, database: database.to_string(), name: t.name, kind: TypeKind::Composite(fields) })
}

/// The user-defined type a column or domain is declared with, as
/// `ColumnDef::user_type` keeps it: a composite type or domain by name, an array
/// of one as `name[]`; None for built-in types, enums and unknown names.
pub fn declared_user_type(catalog: &Catalog, database: &str, dt: &ast::DataType) -> Option<String> {
    let (dt, array) = match dt {
        ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(e, _)) => (e.as_ref(), true),
        other => (other, false),
    };
    let def = user_type(catalog, database, dt)?;
    if !matches!(def.kind, TypeKind::Composite(_) | TypeKind::Domain(_)) {
        return None;
    }
    Some(if array { format!("{}[]", def.name) } else { def.name })
}

/// A value's structure as assignment through fields and subscripts sees it
/// (INSERT's `(f3.if1, f4[1].if2[2])` targets).
#[derive(Debug, Clone)]
pub enum Shape {
    Scalar(SqlType),
    /// An array (carried as its text, of type `ty`) of elements of a shape.
    Array {
        ty: SqlType,
        elem: Box<Shape>,
    },
    /// A composite type's record text: its name and fields.
    Record {
        name: String,
        fields: Vec<(String, Shape)>,
    },
    /// A domain: its constraints hold for the finished value of the inner shape.
    Domain {
        def: Box<TypeDef>,
        inner: Box<Shape>,
    },
}

impl Shape {
    /// The shape of a value of type `ty` declared as `user_type`
    /// (`ColumnDef::user_type`) in `database`.
    pub fn of(catalog: &Catalog, database: &str, ty: SqlType, user_type: Option<&str>) -> Shape {
        if let Some(name) = user_type {
            if let Some(elem) = name.strip_suffix("[]") {
                let ety = ty.elem().unwrap_or(SqlType::Text);
                return Shape::Array { ty, elem: Box::new(Shape::of(catalog, database, ety, Some(elem))) };
            }
            match named_type(catalog, database, name) {
                Some(def) => match &def.kind {
                    TypeKind::Composite(fields) => {
                        let fields = fields.iter().map(|(f, t)| (f.clone(), Shape::of(catalog, database, *t, None))).collect();
                        return Shape::Record { name: def.name.clone(), fields };
                    }
                    TypeKind::Domain(d) => {
                        let inner = Shape::of(catalog, database, d.base, d.base_type.as_deref());
                        return Shape::Domain { def: Box::new(def.clone()), inner: Box::new(inner) };
                    }
                    _ => {}
                },
                None => {}
            }
        }
        match ty.elem() {
            Some(e) if ty.is_array() => Shape::Array { ty, elem: Box::new(Shape::Scalar(e)) },
            _ => Shape::Scalar(ty),
        }
    }

    /// The type the shape's values are carried as.
    pub fn ty(&self) -> SqlType {
        match self {
            Shape::Scalar(t) | Shape::Array { ty: t, .. } => *t,
            Shape::Record { .. } => SqlType::Text,
            Shape::Domain { inner, .. } => inner.ty(),
        }
    }

    /// The type's name in messages.
    pub fn name(&self) -> String {
        match self {
            Shape::Scalar(t) | Shape::Array { ty: t, .. } => t.to_string(),
            Shape::Record { name, .. } => name.clone(),
            Shape::Domain { def, .. } => def.name.clone(),
        }
    }
}

/// How a user-defined type's values are carried.
pub fn type_of(def: &TypeDef) -> Result<SqlType> {
    match &def.kind {
        TypeKind::Shell => bail!(UndefinedObject, "type \"{}\" is only a shell", def.name),
        TypeKind::Composite(_) | TypeKind::Enum(_) => Ok(SqlType::Text),
        TypeKind::Domain(d) => Ok(d.base),
        TypeKind::Base(b) => Ok(SqlType::Base { oid: def.id, repr: b.repr }),
    }
}

/// The built-in input and output functions a base type may name
/// (`CREATE FUNCTION … LANGUAGE internal AS 'int4in'`): the type whose
/// values they read or write, and whether it is the input one.
pub fn io_function(source: &str) -> Option<(Elem, bool)> {
    let (ty, input) = match source.strip_suffix("in") {
        Some(t) => (t, true),
        None => (source.strip_suffix("out")?, false),
    };
    let e = match ty {
        "int2" => Elem::Int2,
        "int4" => Elem::Int4,
        "int8" => Elem::Int8,
        "float4" => Elem::Float4,
        "float8" => Elem::Float8,
        "bool" => Elem::Bool,
        "text" => Elem::Text,
        "varchar" => Elem::Varchar,
        "date" => Elem::Date,
        "timestamp" => Elem::Timestamp,
        "timestamptz" => Elem::TimestampTz,
        "interval" => Elem::Interval,
        "numeric" => Elem::Numeric,
        "oid" => Elem::Oid,
        _ => return None,
    };
    Some((e, input))
}

/// An operator's symbol, as CREATE OPERATOR names it (None: no operator
/// of a user type can be meant).
pub fn operator_symbol(op: &ast::BinaryOperator) -> Option<String> {
    use ast::BinaryOperator as BO;
    Some(match op {
        BO::Eq => "=".into(),
        BO::NotEq => "<>".into(),
        BO::Lt => "<".into(),
        BO::LtEq => "<=".into(),
        BO::Gt => ">".into(),
        BO::GtEq => ">=".into(),
        BO::Plus => "+".into(),
        BO::Minus => "-".into(),
        BO::Multiply => "*".into(),
        BO::Divide => "/".into(),
        BO::Modulo => "%".into(),
        BO::PGCustomBinaryOperator(parts) => parts.last()?.clone(),
        _ => return None,
    })
}

/// A type name, user-defined types of `database` included.
pub fn resolve_type(catalog: &Catalog, database: &str, dt: &ast::DataType) -> Result<SqlType> {
    match super::sql_type(dt) {
        Err(e) if e.kind == crate::error::ErrorKind::UndefinedObject => match user_type(catalog, database, dt) {
            Some(def) => type_of(&def),
            None => Err(e),
        },
        r => r,
    }
}

/// A type name as operators, operator classes and casts record it: a
/// built-in type, or a user-defined one by name (a domain stays itself).
pub fn type_ref(catalog: &Catalog, database: &str, dt: &ast::DataType) -> Result<TypeRef> {
    match super::sql_type(dt) {
        Err(e) if e.kind == crate::error::ErrorKind::UndefinedObject => match user_type(catalog, database, dt) {
            Some(def) => Ok(TypeRef::User(def.name)),
            None => Err(e),
        },
        r => r.map(TypeRef::Builtin),
    }
}

/// How a recorded type's values are carried.
pub fn type_ref_type(catalog: &Catalog, database: &str, t: &TypeRef) -> Result<SqlType> {
    match t {
        TypeRef::Builtin(t) => Ok(*t),
        TypeRef::User(n) => match catalog.user_type(database, n) {
            Some(def) => type_of(&def),
            None => Err(err!(UndefinedObject, "type \"{n}\" does not exist")),
        },
    }
}

/// The user function a recorded reference names (by name and argument
/// types): its name and the one overload, as the binder takes them.
pub fn support_function(catalog: &Catalog, database: &str, f: &FunctionRef) -> Result<(String, Vec<FunctionDef>)> {
    let types = f.args.iter().map(|t| type_ref_type(catalog, database, t)).collect::<Result<Vec<_>>>()?;
    let defs: Vec<FunctionDef> =
        catalog.functions(database, &f.name).into_iter().filter(|d| d.aggregate.is_none() && d.arg_types() == types).collect();
    if defs.is_empty() {
        let names: Vec<String> = f.args.iter().map(TypeRef::name).collect();
        bail!(UndefinedFunction, "function {}({}) does not exist", f.name, names.join(", "));
    }
    Ok((f.name.clone(), defs))
}

impl<'a> Planner<'a> {
    /// A value's type as operators and casts record it.
    fn type_ref_of(&self, t: SqlType) -> TypeRef {
        match t {
            SqlType::Base { oid, .. } => match self.catalog.user_type_by_id(oid) {
                Some(def) => TypeRef::User(def.name),
                None => TypeRef::Builtin(t),
            },
            t => TypeRef::Builtin(t),
        }
    }

    /// A cast the catalog may hold (`CREATE CAST`), from a value to a type
    /// (`target_ref` as casts record it); where none is recorded, a base
    /// type still reads and writes text through its representation.
    pub(super) fn user_cast(&self, inner: Expr, target_ref: TypeRef, target: SqlType, scope: &Scope) -> Result<Expr> {
        let from = inner.ty();
        if from == target {
            return Ok(inner);
        }
        let source_ref = self.type_ref_of(from);
        let Some(cast) = self.catalog.cast(&self.database, &source_ref, &target_ref) else {
            if (target.is_text() && from.is_base()) || (from.is_text() && target.is_base()) {
                return Ok(Expr::Cast { expr: Box::new(inner), ty: target });
            }
            bail!(CannotCoerce, "cannot cast type {} to {}", source_ref.name(), target_ref.name());
        };
        match cast.function {
            Some(f) => {
                let (name, defs) = support_function(self.catalog, &self.database, &f)?;
                let e = self.bind_user_call(&name, defs, vec![inner], &[None], scope)?;
                if e.ty() == target {
                    Ok(e)
                } else {
                    Ok(Expr::Cast { expr: Box::new(e), ty: target })
                }
            }
            // Through text: the source's output read by the target's input.
            None if cast.inout => Ok(Expr::Cast { expr: Box::new(Expr::Cast { expr: Box::new(inner), ty: SqlType::Text }), ty: target }),
            // WITHOUT FUNCTION: the bits are the value.
            None => Ok(Expr::Cast { expr: Box::new(inner), ty: target }),
        }
    }

    /// `l op r` where an operand is of a base type: the user operator
    /// declared for exactly these types (an untyped literal takes the other
    /// operand's type), as a call of its function.
    pub(super) fn bind_user_operator(&self, symbol: &str, l: Expr, r: Expr, scope: &Scope) -> Result<Expr> {
        let untyped = |e: Expr, t: SqlType| -> Result<Expr> {
            if e.ty() == SqlType::Unknown && t.is_base() {
                super::coerce(e, t)
            } else {
                Ok(e)
            }
        };
        let (lt, rt) = (l.ty(), r.ty());
        let l = untyped(l, rt)?;
        let r = untyped(r, lt)?;
        let (lref, rref) = (self.type_ref_of(l.ty()), self.type_ref_of(r.ty()));
        let op = self
            .catalog
            .operators_named(&self.database, symbol)
            .into_iter()
            .find(|o| o.left.as_ref() == Some(&lref) && o.right == rref)
            .ok_or_else(|| {
                err!(UndefinedFunction, "operator does not exist: {} {symbol} {}", lref.name(), rref.name())
                    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
            })?;
        let (name, defs) = support_function(self.catalog, &self.database, &FunctionRef { name: op.function, args: vec![lref, rref] })?;
        self.bind_user_call(&name, defs, vec![l, r], &[None, None], scope)
    }

    /// `x [NOT] IN (items)` for a base type: `x = item` ORed (NOT IN: `x <>
    /// item` ANDed, PostgreSQL's `<> ALL`), each through the user operator,
    /// so a function that is not strict sees the NULLs.
    pub(super) fn bind_user_in(&self, x: Expr, items: Vec<Expr>, negated: bool, scope: &Scope) -> Result<Expr> {
        let symbol = if negated { "<>" } else { "=" };
        let op = if negated { crate::exec::expr::BinOp::And } else { crate::exec::expr::BinOp::Or };
        let mut acc: Option<Expr> = None;
        for item in items {
            let c = self.bind_user_operator(symbol, x.clone(), item, scope)?;
            acc = Some(match acc {
                None => c,
                Some(a) => Expr::Binary { op, left: Box::new(a), right: Box::new(c), ty: SqlType::Bool },
            });
        }
        acc.ok_or_else(|| err!(Syntax, "syntax error at or near \")\""))
    }

    /// The user-defined type a cast's type names (None: a built-in type).
    pub(super) fn cast_user_type(&self, dt: &ast::DataType) -> Option<TypeDef> {
        if super::sql_type(dt).is_ok() {
            return None;
        }
        if let Some(t) = user_type(self.catalog, &self.database, dt) {
            return Some(t);
        }
        // An unqualified name through `search_path`, as relations are found
        // (`public` is the connection's database).
        self.search_path_databases().into_iter().find_map(|db| user_type(self.catalog, &db, dt))
    }

    /// `expr::t` for a user-defined type t.
    pub(super) fn bind_user_type_cast(&self, expr: &ast::Expr, def: &TypeDef, scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        let inner = self.bind_expr(expr, scope, agg)?;
        self.cast_to_user_type(inner, def)
    }

    /// A bound value cast to a user-defined type.
    pub fn cast_to_user_type(&self, inner: Expr, def: &TypeDef) -> Result<Expr> {
        match &def.kind {
            TypeKind::Shell => bail!(UndefinedObject, "type \"{}\" is only a shell", def.name),
            TypeKind::Composite(fields) => match inner {
                Expr::Func { name, args, .. } if name == "record_out" => {
                    if args.len() != fields.len() {
                        return Err(err!(CannotCoerce, "cannot cast type record to {}", def.name).with_detail(
                            if args.len() < fields.len() { "Input has too few columns." } else { "Input has too many columns." },
                        ));
                    }
                    let args = args.into_iter().zip(fields).map(|(a, (_, t))| explicit_cast(a, *t)).collect::<Result<Vec<_>>>()?;
                    Ok(Expr::Func { name: "record_out".into(), args, ty: SqlType::Text })
                }
                // A record literal stays its text.
                other if other.ty().is_text() => explicit_cast(other, SqlType::Text),
                other => Err(err!(CannotCoerce, "cannot cast type {} to {}", other.ty(), def.name)),
            },
            TypeKind::Enum(labels) => {
                if !inner.ty().is_text() {
                    bail!(CannotCoerce, "cannot cast type {} to {}", inner.ty(), def.name);
                }
                let v = explicit_cast(inner, SqlType::Text)?;
                let list: Vec<Expr> = labels.iter().map(|l| Expr::lit(Value::Text(l.clone()), SqlType::Text)).collect();
                let ok = Expr::InList { expr: Box::new(v.clone()), list, negated: false };
                Ok(Expr::Func {
                    name: "domain_check".into(),
                    args: vec![
                        v,
                        ok,
                        Expr::lit(Value::Int(2), SqlType::Int4),
                        Expr::lit(Value::Text(format!("invalid input value for enum {}", def.name)), SqlType::Text),
                    ],
                    ty: SqlType::Text,
                })
            }
            TypeKind::Base(b) => {
                let target = SqlType::Base { oid: def.id, repr: b.repr };
                match inner.ty() {
                    t if t == target => Ok(inner),
                    // The type's input function: its representation's.
                    SqlType::Unknown => super::coerce(inner, target),
                    _ => self.user_cast(inner, TypeRef::User(def.name.clone()), target, &Scope::new(vec![], None)),
                }
            }
            TypeKind::Domain(d) => {
                let mut v = explicit_cast(inner, d.base)?;
                if d.not_null {
                    let ok = Expr::IsNull { expr: Box::new(v.clone()), negated: true };
                    v = domain_check(v, ok, 0, format!("domain {} does not allow null values", def.name));
                }
                for (cname, text) in &d.checks {
                    let check = self.bind_domain_check(text, d)?;
                    let value = v.clone();
                    let ok = check.map(0, &|x, _| match x {
                        Expr::Column { index: 0, .. } => Some(value.clone()),
                        _ => None,
                    });
                    let ok = coerce(ok, SqlType::Bool)?;
                    v = domain_check(v, ok, 1, format!("value for domain {} violates check constraint \"{cname}\"", def.name));
                }
                Ok(v)
            }
        }
    }

    /// A domain's CHECK expression bound over one column, VALUE.
    fn bind_domain_check(&self, text: &str, d: &crate::catalog::DomainDef) -> Result<Expr> {
        let e = crate::parser::parse_expr(text)?;
        let scope = Scope::new(vec![PlanColumn { name: "value".into(), qualifier: None, ty: d.base }], None);
        // Over a composite type, `(VALUE).field` reads the record's fields.
        if let Shape::Record { fields, .. } = Shape::of(self.catalog, &self.database, d.base, d.base_type.as_deref()) {
            scope.records.borrow_mut().push((0, fields.iter().map(|(n, s)| (n.clone(), s.ty())).collect()));
        }
        self.bind_expr(&e, &scope, None)
    }

    /// `enum_range(NULL::e)`: e's labels as a text array (the argument's
    /// value does not matter, its type does).
    pub(super) fn bind_enum_range(&self, args: &[ast::Expr]) -> Result<Option<Expr>> {
        let [ast::Expr::Cast { data_type, .. }] = args else { return Ok(None) };
        let Some(def) = self.cast_user_type(data_type) else { return Ok(None) };
        let labels = crate::catalog::user_type::enum_labels(&def)?;
        let items: Vec<Option<String>> = labels.iter().map(|l| Some(l.clone())).collect();
        Ok(Some(Expr::lit(Value::Text(crate::types::array::format_array(&items)), SqlType::Array(crate::types::Elem::Text))))
    }
}

/// An explicit cast of a bound value (literals converted at once).
fn explicit_cast(e: Expr, ty: SqlType) -> Result<Expr> {
    match e {
        Expr::Literal { .. } | Expr::Param { .. } => coerce(e, ty),
        other if other.ty() == ty => Ok(other),
        other => Ok(Expr::Cast { expr: Box::new(other), ty }),
    }
}

fn domain_check(v: Expr, ok: Expr, kind: i64, message: String) -> Expr {
    let ty = v.ty();
    Expr::Func {
        name: "domain_check".into(),
        args: vec![v, ok, Expr::lit(Value::Int(kind), SqlType::Int4), Expr::lit(Value::Text(message), SqlType::Text)],
        ty,
    }
}
