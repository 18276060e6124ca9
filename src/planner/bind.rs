//! Expression binding: names to column positions, literals and parameters
//! to typed values, operators to PostgreSQL's coercions.

use sqlparser::ast::{self, BinaryOperator as BO, UnaryOperator as UO};

use super::logical::LogicalPlan;
use super::{ident, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::{parse_text_as, BinOp, Expr, SubqueryKind};
use crate::exec::plan::{AggCall, AggFunc};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// Permission to bind aggregate and window calls (select list, HAVING,
/// ORDER BY): they bind to `Expr::Agg` / `Expr::Window` values, which the
/// query binder turns into its aggregate and window nodes.
#[derive(Default)]
pub struct AggCollector {
    /// The FROM clause's time index (position, type) when it has exactly
    /// one: the time `first(x)` / `last(x)` order by.
    pub time_index: Option<(usize, SqlType)>,
}

pub fn agg_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "string_agg" => AggFunc::StringAgg,
        "array_agg" => AggFunc::ArrayAgg,
        "stddev" | "stddev_samp" => AggFunc::StddevSamp,
        "stddev_pop" => AggFunc::StddevPop,
        "variance" | "var_samp" => AggFunc::VarSamp,
        "var_pop" => AggFunc::VarPop,
        "first" => AggFunc::First,
        "last" => AggFunc::Last,
        other => AggFunc::Regr(crate::exec::plan::RegrFunc::from_name(other)?),
    })
}

/// `first(x)` / `last(x)` take the FROM clause's time index as their
/// second argument; `first(x, t)` names the time. t must be a timestamp,
/// a date or an integer.
fn first_last_time(name: &str, bound: &mut Vec<Expr>, collector: &AggCollector) -> Result<()> {
    match bound.len() {
        1 => match collector.time_index {
            Some((index, ty)) => bound.push(Expr::Column { index, ty }),
            None => {
                return Err(err!(UndefinedFunction, "{name}(x) needs a time index: the FROM clause has no single table with one")
                    .with_hint(format!("name the time: {name}(x, ts)")))
            }
        },
        2 => {
            let t = bound[1].ty();
            if t == SqlType::Unknown {
                bound[1] = coerce(bound[1].clone(), SqlType::Timestamp)?;
            } else if !(t.is_timestamp() || t.is_integer() || t == SqlType::Date) {
                let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
                return Err(crate::exec::functions::registry::no_such_function(name, &types));
            }
        }
        _ => {
            let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
            return Err(crate::exec::functions::registry::no_such_function(name, &types));
        }
    }
    Ok(())
}

/// Coerce an expression to a type: literals are converted at plan time
/// (so `'abc'::int` fails here with 22P02), the rest get a cast.
pub fn coerce(e: Expr, ty: SqlType) -> Result<Expr> {
    if e.ty() == ty {
        return Ok(e);
    }
    // A base type's input is its representation's (`int4in` for myint).
    if ty.is_base() && (e.ty() == SqlType::Unknown || e.ty().is_text()) {
        return Ok(match coerce(e, ty.physical())? {
            Expr::Literal { value, .. } => Expr::lit(value, ty),
            other => Expr::Cast { expr: Box::new(other), ty },
        });
    }
    match e {
        Expr::Literal { value: Value::Null, .. } => Ok(Expr::lit(Value::Null, ty)),
        Expr::Literal { value: Value::Text(s), ty: from } if from.is_text() => {
            if ty.is_text() {
                return Ok(Expr::lit(Value::Text(s), ty));
            }
            Ok(Expr::lit(parse_text_as(&s, ty)?, ty))
        }
        Expr::Param { index, .. } => Ok(Expr::Param { index, ty }),
        e => {
            let from = e.ty();
            if from == SqlType::Unknown {
                return Ok(Expr::Cast { expr: Box::new(e), ty });
            }
            Ok(Expr::Cast { expr: Box::new(e), ty })
        }
    }
}

/// A string function's first argument: bytea stays bytea (the function
/// has bytea forms), anything else is text.
fn text_or_bytea(e: Expr) -> Result<Expr> {
    if e.ty() == SqlType::Bytea {
        Ok(e)
    } else {
        coerce(e, SqlType::Text)
    }
}

/// Whether an implicit coercion between two types is allowed.
fn comparable(a: SqlType, b: SqlType) -> Option<SqlType> {
    SqlType::common(a, b)
}

/// A numeric constant as PostgreSQL types it: integer if it fits int4,
/// else int8, else numeric; with a point or an exponent, numeric.
pub fn parse_number(s: &str) -> Result<(Value, SqlType)> {
    if let Ok(i) = s.parse::<i64>() {
        let ty = if i32::try_from(i).is_ok() { SqlType::Int4 } else { SqlType::Int8 };
        return Ok((Value::Int(i), ty));
    }
    let n = crate::types::numeric::Numeric::parse(s).map_err(|_| err!(Syntax, "invalid number \"{s}\""))?;
    Ok((Value::Text(n.to_string()), SqlType::Numeric))
}

/// The typmod of `NUMERIC(p[, s])` / `DECIMAL(p[, s])` (None without one).
pub fn numeric_typmod(dt: &ast::DataType) -> Result<Option<i32>> {
    use ast::DataType as D;
    use ast::ExactNumberInfo as E;
    let info = match dt {
        D::Numeric(i) | D::Decimal(i) | D::Dec(i) => i,
        _ => return Ok(None),
    };
    Ok(match info {
        E::None => None,
        E::Precision(p) => Some(crate::types::numeric::make_typmod(*p as i64, 0)?),
        E::PrecisionAndScale(p, s) => Some(crate::types::numeric::make_typmod(*p as i64, *s as i64)?),
    })
}

/// The typmod of `VARCHAR(n)` / `CHAR(n)` (n + 4, as PostgreSQL encodes it); `CHAR` alone is
/// `CHAR(1)`. None for other types and for VARCHAR without a length.
pub fn char_typmod(dt: &ast::DataType) -> Result<Option<i32>> {
    use ast::CharacterLength as L;
    use ast::DataType as D;
    let (len, name) = match dt {
        D::Varchar(l) | D::CharacterVarying(l) | D::CharVarying(l) => (l.as_ref(), "varchar"),
        D::Char(l) | D::Character(l) => (Some(l.as_ref().unwrap_or(&L::IntegerLength { length: 1, unit: None })), "char"),
        _ => return Ok(None),
    };
    match len {
        Some(L::IntegerLength { length, .. }) => {
            if *length < 1 {
                bail!(InvalidParameterValue, "length for type {name} must be at least 1");
            }
            if *length > 10_485_760 {
                bail!(InvalidParameterValue, "length for type {name} cannot exceed 10485760");
            }
            Ok(Some(*length as i32 + 4))
        }
        _ => Ok(None),
    }
}

/// `e` under a NUMERIC(p, s) typmod (rounded, 22003 past the precision).
pub fn with_numeric_typmod(e: Expr, typmod: Option<i32>) -> Expr {
    match typmod {
        None => e,
        Some(t) => Expr::Func {
            name: "numeric_typmod".into(),
            args: vec![e, Expr::lit(Value::Int(t as i64), SqlType::Int4)],
            ty: SqlType::Numeric,
        },
    }
}

pub fn sql_type(dt: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match dt {
        D::Boolean | D::Bool => SqlType::Bool,
        // GreptimeDB's INT16/INT32/INT64 and UINT8..UINT64 name sizes in
        // bits; INT8 stays PostgreSQL's bigint. Unsigned types get the
        // smallest signed type that holds them (UINT64 above i64::MAX does
        // not fit; README.md lists this).
        D::SmallInt(_) | D::Int2(_) | D::TinyInt(_) | D::Int16 | D::UInt8 | D::UTinyInt => SqlType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) | D::MediumInt(_) | D::Int32 | D::UInt16 | D::USmallInt => SqlType::Int4,
        D::BigInt(_) | D::Int8(_) | D::Int64 | D::UInt32 | D::UInt64 | D::Signed | D::SignedInteger | D::Unsigned | D::UnsignedInteger => {
            SqlType::Int8
        }
        D::Real | D::Float4 | D::Float32 => SqlType::Float4,
        D::Double(_) | D::DoublePrecision | D::Float8 | D::Float64 | D::Float(_) => SqlType::Float8,
        D::Numeric(_) | D::Decimal(_) | D::Dec(_) => SqlType::Numeric,
        D::Text | D::String(_) | D::Char(_) | D::Character(_) | D::Clob(_) => SqlType::Text,
        D::Varchar(_) | D::CharVarying(_) | D::CharacterVarying(_) | D::Nvarchar(_) => SqlType::Varchar,
        D::Timestamp(_, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => SqlType::TimestampTz,
            _ => SqlType::Timestamp,
        },
        D::Datetime(_) => SqlType::Timestamp,
        D::Time(_, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => SqlType::TimeTz,
            _ => SqlType::Time,
        },
        D::Date => SqlType::Date,
        D::Interval { .. } => SqlType::Interval,
        D::Bytea => SqlType::Bytea,
        // `int[]`, `int ARRAY`, `ARRAY<int>`: one dimension of a scalar type.
        D::Array(def) => match def {
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::Qualified(inner, _)
            | ast::ArrayElemTypeDef::AngleBracket(inner)
            | ast::ArrayElemTypeDef::Parenthesis(inner)
            | ast::ArrayElemTypeDef::ParenthesisNotNull(inner) => {
                // Catalog element types weir has no scalar for (aclitem,
                // oidvector, "char" …) read as text, as before arrays were typed.
                let elem = match sql_type(inner) {
                    Err(e) if e.kind == crate::error::ErrorKind::UndefinedObject => SqlType::Text,
                    other => other?,
                };
                elem.array_of().ok_or_else(|| err!(FeatureNotSupported, "multidimensional arrays are not supported"))?
            }
            ast::ArrayElemTypeDef::None => bail!(FeatureNotSupported, "an array type needs its element type"),
        },
        D::Custom(name, _) => {
            // pg_catalog.regtype and friends: the last part names the type.
            let n = name.0.last().map(|p| p.to_string()).unwrap_or_default().to_lowercase();
            let n = n.trim_matches('"').to_string();
            match n.as_str() {
                "timestamptz" => SqlType::TimestampTz,
                "timetz" => SqlType::TimeTz,
                "int" | "int4" => SqlType::Int4,
                "int2" => SqlType::Int2,
                "int8" => SqlType::Int8,
                "float4" => SqlType::Float4,
                "float8" => SqlType::Float8,
                "bool" => SqlType::Bool,
                "varchar" => SqlType::Varchar,
                "string" | "name" | "regclass" | "regtype" | "regproc" | "regnamespace" | "text" => SqlType::Text,
                "oid" => SqlType::Oid,
                "bytea" => SqlType::Bytea,
                "float" => SqlType::Float8,
                // character without a length: text here (no blank padding).
                "bpchar" => SqlType::Text,
                "numeric" | "decimal" => SqlType::Numeric,
                // An untyped literal's pseudo-type (no column may have it).
                "unknown" => SqlType::Unknown,
                g => match crate::types::geo::Geo::from_name(g) {
                    Some(g) => SqlType::Geo(g),
                    None => bail!(UndefinedObject, "type \"{n}\" does not exist"),
                },
            }
        }
        // reg* casts are bound by `bind_reg_cast`; elsewhere the name.
        D::Regclass => SqlType::Text,
        other => bail!(FeatureNotSupported, "type {other} is not supported"),
    })
}

/// The type a function name stands for in a function-style cast: an
/// unqualified name of a type weir has (None for anything else).
fn function_style_cast(name: &str, f: &ast::Function) -> Option<ast::DataType> {
    use ast::DataType as D;
    if f.name.0.len() != 1 || f.over.is_some() || f.filter.is_some() {
        return None;
    }
    let data_type = match name {
        "date" => D::Date,
        "timestamp" => D::Timestamp(None, ast::TimezoneInfo::None),
        "interval" => D::Interval { fields: None, precision: None },
        _ => D::Custom(f.name.clone(), vec![]),
    };
    sql_type(&data_type).ok().map(|_| data_type)
}

impl<'a> Planner<'a> {
    /// DateStyle's field order for date literals bound in this session.
    fn date_order(&self) -> crate::types::datetime_input::DateOrder {
        crate::types::datetime_input::DateOrder::from_datestyle(self.ctx.settings.get("datestyle").map_or("ISO, MDY", |v| v.as_str()))
    }

    /// Resolve a (possibly qualified) column name through the scopes.
    pub fn resolve_column(&self, parts: &[String], scope: &Scope) -> Result<Expr> {
        let (qual, name) = match parts {
            [n] => (None, n.as_str()),
            [q, n] => (Some(q.as_str()), n.as_str()),
            [_, q, n] | [_, _, q, n] => (Some(q.as_str()), n.as_str()),
            _ => bail!(Syntax, "improper qualified name"),
        };
        let mut depth = 0;
        let mut s = Some(scope);
        while let Some(sc) = s {
            // Inside a function body the caller's names end here: then
            // the body's parameters (`function.rs`).
            if self.is_barrier(sc) {
                if let Some(p) = self.named_param(qual, name, depth, sc)? {
                    return Ok(p);
                }
                break;
            }
            let hits: Vec<usize> = sc
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    c.name == name
                        && match qual {
                            None => !super::is_hidden(c) || super::is_system(c),
                            Some(q) => super::visible_qualifier(c) == Some(q),
                        }
                })
                .map(|(i, _)| i)
                .collect();
            if hits.len() > 1 {
                bail!(AmbiguousColumn, "column reference \"{name}\" is ambiguous");
            }
            if let Some(&i) = hits.first() {
                let ty = sc.columns[i].ty;
                if depth == 0 {
                    return Ok(Expr::Column { index: i, ty });
                }
                let mut refs = sc.outer_refs.borrow_mut();
                if !refs.iter().any(|(j, _)| *j == i) {
                    refs.push((i, ty));
                }
                return Ok(Expr::Outer { depth, index: i, ty });
            }
            depth += 1;
            s = sc.parent;
        }
        match qual {
            Some(q) => {
                let known = {
                    let mut s = Some(scope);
                    let mut k = false;
                    while let Some(sc) = s {
                        k |= sc.columns.iter().any(|c| super::visible_qualifier(c) == Some(q));
                        s = sc.parent;
                    }
                    k
                };
                if known {
                    bail!(UndefinedColumn, "column {q}.{name} does not exist")
                } else {
                    bail!(UndefinedTable, "missing FROM-clause entry for table \"{q}\"")
                }
            }
            None => {
                // A table's name alone is its whole row, as a record (its
                // columns by position: their names may repeat).
                let mut depth = 0;
                let mut s = Some(scope);
                while let Some(sc) = s.filter(|sc| !self.is_barrier(sc)) {
                    let hits: Vec<usize> = (0..sc.columns.len())
                        .filter(|&i| !super::is_hidden(&sc.columns[i]) && super::visible_qualifier(&sc.columns[i]) == Some(name))
                        .collect();
                    if !hits.is_empty() {
                        let mut args = Vec::new();
                        for i in hits {
                            let ty = sc.columns[i].ty;
                            if depth == 0 {
                                args.push(Expr::Column { index: i, ty });
                            } else {
                                let mut refs = sc.outer_refs.borrow_mut();
                                if !refs.iter().any(|(j, _)| *j == i) {
                                    refs.push((i, ty));
                                }
                                args.push(Expr::Outer { depth, index: i, ty });
                            }
                        }
                        return Ok(Expr::Func { name: "record_out".into(), args, ty: SqlType::Text });
                    }
                    depth += 1;
                    s = sc.parent;
                }
                bail!(UndefinedColumn, "column \"{name}\" does not exist")
            }
        }
    }

    pub fn bind_expr(&self, e: &ast::Expr, scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        // One level of binding (bind_expr → bind_function → bind_expr) takes ~140 KiB of a
        // debug build's stack, and bind_function clones its arguments' subtrees (a recursion
        // as deep as the subtree): keep 4 MiB in hand and continue on a fresh 16 MiB segment
        // when less is left, so every nesting the parser's limit (NESTING_DEPTH_MAX) admits binds.
        stacker::maybe_grow(4 << 20, 16 << 20, || self.bind_expr_at(e, scope, agg))
    }

    fn bind_expr_at(&self, e: &ast::Expr, scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        use ast::Expr as E;
        if let Some(x) = row_comparison(e)? {
            return self.bind_expr(&x, scope, agg);
        }
        Ok(match e {
            // CURRENT_SCHEMA is a keyword: a function call without parentheses.
            E::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("current_schema") => self
                .bind_catalog_function("current_schema", &[], scope, agg)?
                .ok_or_else(|| err!(Internal, "current_schema is not a catalog function"))?,
            E::Identifier(i) => self.resolve_column(&[ident(i)], scope)?,
            E::CompoundIdentifier(parts) => self.resolve_column(&parts.iter().map(ident).collect::<Vec<_>>(), scope)?,
            E::Nested(inner) => self.bind_expr(inner, scope, agg)?,
            // `$n` inside a function body is its parameter.
            E::Value(v) => match &v.value {
                ast::Value::Placeholder(p) => match self.positional_param(p, scope)? {
                    Some(e) => e,
                    None => self.bind_value(&v.value)?,
                },
                other => self.bind_value(other)?,
            },
            E::TypedString(ts) => {
                let ty = sql_type(&ts.data_type)?;
                let s = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let order = self.date_order();
                let value = crate::types::datetime_input::with_date_order(order, || parse_text_as(&s, ty))?;
                // `timestamp(p) '…'`: rounded to p fractional digits.
                let value = match (value, &ts.data_type) {
                    (Value::Timestamp(us), ast::DataType::Timestamp(Some(p), _)) => Value::Timestamp(
                        crate::types::round_timestamp(us, (*p).min(6) as u32)
                            .ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?,
                    ),
                    (Value::Time(us), ast::DataType::Time(Some(p), _)) => Value::Time(crate::types::time::round_time(us, *p as u32)),
                    (Value::TimeTz(v), ast::DataType::Time(Some(p), _)) => {
                        let (us, zone) = crate::types::time::timetz_unpack(v);
                        Value::TimeTz(crate::types::time::timetz_pack(crate::types::time::round_time(us, *p as u32), zone))
                    }
                    // `interval(p) '…'`, `interval '…'` cast to fields: the typmod applies.
                    (Value::Interval(iv), dt) => match interval_cast_typmod(dt) {
                        Some((range, precision)) => Value::Interval(crate::types::interval_input::adjust_for_typmod(iv, range, precision)),
                        None => Value::Interval(iv),
                    },
                    (value, _) => value,
                };
                Expr::lit(value, ty)
            }
            E::Cast { expr, data_type, .. } if super::regtypes::reg_kind(data_type).is_some() => {
                let kind = super::regtypes::reg_kind(data_type).expect("checked");
                let inner = self.bind_expr(expr, scope, agg)?;
                self.infer_param(&inner, SqlType::Text);
                self.bind_reg_cast(inner, kind, false)?
            }
            E::Cast { expr, data_type, .. } if self.cast_user_type(data_type).is_some() => {
                let def = self.cast_user_type(data_type).expect("checked");
                self.bind_user_type_cast(expr, &def, scope, agg)?
            }
            E::Cast { expr, data_type, .. } => {
                let ty = sql_type(data_type)?;
                let typmod = numeric_typmod(data_type)?;
                let inner = self.bind_reg_operand(expr, scope, agg, ty.is_integer())?;
                if inner.ty().is_base() {
                    // Only the casts CREATE CAST made (and output as text).
                    return self.user_cast(inner, crate::catalog::operator::TypeRef::Builtin(ty), ty, scope);
                }
                self.infer_param(&inner, ty);
                let cast = match inner {
                    Expr::Literal { .. } | Expr::Param { .. } => {
                        crate::types::datetime_input::with_date_order(self.date_order(), || coerce(inner, ty))?
                    }
                    other => {
                        if other.ty() == ty {
                            other
                        } else {
                            Expr::Cast { expr: Box::new(other), ty }
                        }
                    }
                };
                // An explicit cast to varchar(n) / char(n) cuts the value to n characters;
                // char(n) values are kept without their trailing blanks (`char_typmod`).
                match char_typmod(data_type)? {
                    Some(t) => {
                        let cut = self.call("left", vec![cast, Expr::lit(Value::Int((t - 4) as i64), SqlType::Int8)])?;
                        if ty == SqlType::Varchar {
                            Expr::Cast { expr: Box::new(cut), ty }
                        } else {
                            self.call("rtrim", vec![cut, Expr::lit(Value::Text(" ".into()), SqlType::Text)])?
                        }
                    }
                    None => match interval_cast_typmod(data_type) {
                        // `x::INTERVAL DAY TO MINUTE`, `x::interval(2)`: fields dropped, seconds rounded.
                        Some((range, precision)) => self.call(
                            "interval_typmod",
                            vec![
                                cast,
                                Expr::lit(Value::Int(range.0 as i64), SqlType::Int4),
                                Expr::lit(Value::Int(precision.map_or(-1, |p| p as i64)), SqlType::Int4),
                            ],
                        )?,
                        None => match data_type {
                            // `x::time(p)`: rounded to p fractional digits.
                            ast::DataType::Time(Some(p), _) => {
                                self.call("time_typmod", vec![cast, Expr::lit(Value::Int((*p).min(6) as i64), SqlType::Int4)])?
                            }
                            _ => with_numeric_typmod(cast, typmod),
                        },
                    },
                }
            }
            // `|/` and `||/` are float8's operators (dsqrt, dcbrt): a numeric
            // operand is cast to float8, so `|/ 16.0` is 4, not sqrt(numeric)'s
            // 4.000000000000000.
            E::UnaryOp { op: op @ (UO::PGSquareRoot | UO::PGCubeRoot), expr } => {
                let x = self.bind_expr(expr, scope, agg)?;
                let x = if x.ty() == SqlType::Numeric { Expr::Cast { expr: Box::new(x), ty: SqlType::Float8 } } else { x };
                self.call(if matches!(op, UO::PGSquareRoot) { "sqrt" } else { "cbrt" }, vec![x])?
            }
            E::UnaryOp { op: UO::PGAbs, expr } => self.bind_expr(&call_ast("abs", vec![(**expr).clone()]), scope, agg)?,
            E::UnaryOp { op: UO::BitwiseNot, expr } => {
                let x = self.bind_expr(expr, scope, agg)?;
                let t = x.ty();
                self.call("int8not", vec![x]).map_err(|_| {
                    err!(UndefinedFunction, "operator does not exist: ~ {t}")
                        .with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast.")
                })?
            }
            E::UnaryOp { op, expr } => {
                let inner = self.bind_expr(expr, scope, agg)?;
                match op {
                    UO::Not => Expr::Not(Box::new(coerce(inner, SqlType::Bool)?)),
                    UO::Minus => {
                        match inner {
                            Expr::Literal { value: Value::Int(i), .. } => {
                                let v = -i;
                                let ty = if i32::try_from(v).is_ok() { SqlType::Int4 } else { SqlType::Int8 };
                                Expr::lit(Value::Int(v), ty)
                            }
                            Expr::Literal { value: Value::Float(f), ty } => Expr::lit(Value::Float(-f), ty),
                            Expr::Literal { value: Value::Text(t), ty: SqlType::Numeric } => {
                                Expr::lit(Value::Text(crate::types::numeric::Numeric::parse(&t)?.neg().to_string()), SqlType::Numeric)
                            }
                            other => {
                                let other = if other.ty() == SqlType::Unknown { coerce(other, SqlType::Float8)? } else { other };
                                if !other.ty().is_numeric() && other.ty() != SqlType::Interval {
                                    return Err(err!(UndefinedFunction, "operator does not exist: - {}", other.ty()).with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast."));
                                }
                                Expr::Neg(Box::new(other))
                            }
                        }
                    }
                    UO::Plus => {
                        if !inner.ty().is_numeric() && inner.ty() != SqlType::Unknown {
                            return Err(err!(UndefinedFunction, "operator does not exist: + {}", inner.ty()).with_hint(
                                "No operator matches the given name and argument type. You might need to add an explicit type cast.",
                            ));
                        }
                        inner
                    }
                    other => bail!(FeatureNotSupported, "unary operator {other} is not supported"),
                }
            }
            // PostgreSQL's `^` is power(): float8, or numeric for numeric operands.
            E::BinaryOp { left, op: BO::PGExp, right } => {
                self.bind_expr(&call_ast("power", vec![(**left).clone(), (**right).clone()]), scope, agg)?
            }
            E::BinaryOp { left, op, right } => {
                let l = self.bind_reg_operand(left, scope, agg, true)?;
                let r = self.bind_reg_operand(right, scope, agg, true)?;
                if l.ty().is_base() || r.ty().is_base() {
                    let Some(symbol) = super::user_type::operator_symbol(op) else {
                        bail!(UndefinedFunction, "operator does not exist: {} {op} {}", l.ty(), r.ty());
                    };
                    return self.bind_user_operator(&symbol, l, r, scope);
                }
                let regex = match op {
                    BO::PGRegexMatch => Some((false, false)),
                    BO::PGRegexIMatch => Some((false, true)),
                    BO::PGRegexNotMatch => Some((true, false)),
                    BO::PGRegexNotIMatch => Some((true, true)),
                    BO::PGCustomBinaryOperator(parts) => match parts.last().map(|s| s.as_str()) {
                        Some("~") => Some((false, false)),
                        Some("~*") => Some((false, true)),
                        Some("!~") => Some((true, false)),
                        Some("!~*") => Some((true, true)),
                        _ => None,
                    },
                    _ => None,
                };
                match regex {
                    Some((negated, ci)) => {
                        let m = Expr::Func {
                            name: if ci { "regex_imatch".into() } else { "regex_match".into() },
                            args: vec![coerce(l, SqlType::Text)?, coerce(r, SqlType::Text)?],
                            ty: SqlType::Bool,
                        };
                        if negated {
                            Expr::Not(Box::new(m))
                        } else {
                            m
                        }
                    }
                    None => self.bind_binary(op, l, r)?,
                }
            }
            E::Collate { expr, .. } => self.bind_expr(expr, scope, agg)?,
            // `t.col[k]`: a qualified column, then a subscript.
            E::CompoundFieldAccess { root, access_chain }
                if access_chain.len() > 1
                    && matches!(root.as_ref(), E::Identifier(_))
                    && access_chain[..access_chain.len() - 1].iter().all(|a| matches!(a, ast::AccessExpr::Dot(E::Identifier(_))))
                    && matches!(access_chain.last(), Some(ast::AccessExpr::Subscript(ast::Subscript::Index { .. }))) =>
            {
                let mut parts = vec![match root.as_ref() {
                    E::Identifier(i) => i.clone(),
                    _ => unreachable!(),
                }];
                for a in &access_chain[..access_chain.len() - 1] {
                    if let ast::AccessExpr::Dot(E::Identifier(i)) = a {
                        parts.push(i.clone());
                    }
                }
                let inner = E::CompoundFieldAccess {
                    root: Box::new(E::CompoundIdentifier(parts)),
                    access_chain: vec![access_chain.last().unwrap().clone()],
                };
                self.bind_expr(&inner, scope, agg)?
            }
            E::CompoundFieldAccess { root, access_chain } if access_chain.len() == 1 => match &access_chain[0] {
                ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                    let arr = self.bind_expr(root, scope, agg)?;
                    let elem = arr.ty().elem();
                    let arr = coerce(arr, SqlType::Text)?;
                    let idx = coerce(self.bind_expr(index, scope, agg)?, SqlType::Int8)?;
                    // The element's text, cast to a typed array's element
                    // type; untyped (catalog text arrays) otherwise, and
                    // context casts it.
                    let e = Expr::Func { name: "array_subscript".into(), args: vec![arr, idx], ty: SqlType::Unknown };
                    match elem {
                        Some(t) => Expr::Cast { expr: Box::new(e), ty: t },
                        None => e,
                    }
                }
                ast::AccessExpr::Subscript(ast::Subscript::Slice { lower_bound, upper_bound, stride: None }) => {
                    let arr = self.bind_expr(root, scope, agg)?;
                    let ty = if arr.ty().is_array() { arr.ty() } else { SqlType::Array(crate::types::Elem::Text) };
                    let bound = |b: &Option<ast::Expr>| -> Result<Expr> {
                        match b {
                            Some(x) => coerce(self.bind_expr(x, scope, agg)?, SqlType::Int8),
                            None => Ok(Expr::lit(Value::Null, SqlType::Int8)),
                        }
                    };
                    let (lo, hi) = (bound(lower_bound)?, bound(upper_bound)?);
                    Expr::Func { name: "array_slice".into(), args: vec![coerce(arr, SqlType::Text)?, lo, hi], ty }
                }
                ast::AccessExpr::Dot(ast::Expr::Identifier(field)) => {
                    let root = self.bind_expr(root, scope, agg)?;
                    self.bind_field(root, &ident(field), scope)?
                }
                _ => bail!(FeatureNotSupported, "field access is not supported"),
            },
            // `(x).f[1]`, `(x).f.g`: one access at a time, left to right.
            E::CompoundFieldAccess { root, access_chain } if access_chain.len() > 1 => {
                let (last, init) = access_chain.split_last().expect("more than one access");
                let inner = E::CompoundFieldAccess { root: root.clone(), access_chain: init.to_vec() };
                self.bind_expr(&E::CompoundFieldAccess { root: Box::new(inner), access_chain: vec![last.clone()] }, scope, agg)?
            }
            E::IsNull(x) => Expr::IsNull { expr: Box::new(self.bind_expr(x, scope, agg)?), negated: false },
            E::IsNotNull(x) => Expr::IsNull { expr: Box::new(self.bind_expr(x, scope, agg)?), negated: true },
            E::IsTrue(x) => {
                Expr::IsBool { expr: Box::new(coerce(self.bind_expr(x, scope, agg)?, SqlType::Bool)?), value: true, negated: false }
            }
            E::IsNotTrue(x) => {
                Expr::IsBool { expr: Box::new(coerce(self.bind_expr(x, scope, agg)?, SqlType::Bool)?), value: true, negated: true }
            }
            E::IsFalse(x) => {
                Expr::IsBool { expr: Box::new(coerce(self.bind_expr(x, scope, agg)?, SqlType::Bool)?), value: false, negated: false }
            }
            E::IsNotFalse(x) => {
                Expr::IsBool { expr: Box::new(coerce(self.bind_expr(x, scope, agg)?, SqlType::Bool)?), value: false, negated: true }
            }
            // IS [NOT] UNKNOWN: IS [NOT] NULL of a boolean.
            E::IsUnknown(x) | E::IsNotUnknown(x) => Expr::IsNull {
                expr: Box::new(coerce(self.bind_expr(x, scope, agg)?, SqlType::Bool)?),
                negated: matches!(e, E::IsNotUnknown(_)),
            },
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (l, r) = self.unify(self.bind_expr(a, scope, agg)?, self.bind_expr(b, scope, agg)?, "IS DISTINCT FROM")?;
                Expr::IsDistinct { left: Box::new(l), right: Box::new(r), negated: matches!(e, E::IsNotDistinctFrom(..)) }
            }
            E::Between { expr, negated, low, high } => {
                let x = self.bind_expr(expr, scope, agg)?;
                let lo = self.bind_expr(low, scope, agg)?;
                let hi = self.bind_expr(high, scope, agg)?;
                let ge = self.bind_binary(&BO::GtEq, x.clone(), lo)?;
                let le = self.bind_binary(&BO::LtEq, x, hi)?;
                let both = Expr::Binary { op: BinOp::And, left: Box::new(ge), right: Box::new(le), ty: SqlType::Bool };
                if *negated {
                    Expr::Not(Box::new(both))
                } else {
                    both
                }
            }
            E::In { expr, target: ast::InTarget::List(list), negated, .. } => {
                let x = self.bind_expr(expr, scope, agg)?;
                if x.ty().is_base() {
                    let items: Vec<Expr> = list.iter().map(|i| self.bind_expr(i, scope, agg)).collect::<Result<_>>()?;
                    return self.bind_user_in(x, items, *negated, scope);
                }
                // `oid IN ('t'::regclass, …)`: the items are OIDs, as in `oid = 't'::regclass`.
                let want_oid = x.ty().is_integer();
                let items: Vec<Expr> = list.iter().map(|i| self.bind_reg_operand(i, scope, agg, want_oid)).collect::<Result<_>>()?;
                let mut ty = x.ty();
                for i in &items {
                    ty = comparable(ty, i.ty())
                        .ok_or_else(|| err!(DatatypeMismatch, "IN types {} and {} cannot be matched", x.ty(), i.ty()))?;
                }
                let x = coerce(x, ty)?;
                let items = items.into_iter().map(|i| coerce(i, ty)).collect::<Result<_>>()?;
                Expr::InList { expr: Box::new(x), list: items, negated: *negated }
            }
            E::In { expr, target: ast::InTarget::Subquery(subquery), negated, .. } => {
                let x = self.bind_expr(expr, scope, agg)?;
                let (plan, correlated, outer_refs) = self.plan_subquery(subquery, scope)?;
                let cols = plan.columns();
                if cols.len() != 1 {
                    bail!(Syntax, "subquery has too {} columns", if cols.len() > 1 { "many" } else { "few" });
                }
                let sty = cols[0].ty;
                let ty = comparable(x.ty(), sty).ok_or_else(|| {
                    err!(UndefinedFunction, "operator does not exist: {} = {}", x.ty(), sty)
                        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
                })?;
                let plan = cast_plan_column(plan, ty);
                Expr::subquery(
                    plan,
                    SubqueryKind::In { expr: Box::new(coerce(x, ty)?), negated: *negated },
                    correlated,
                    outer_refs,
                    SqlType::Bool,
                )
            }
            E::Exists { subquery, negated } => {
                let (plan, correlated, outer_refs) = self.plan_subquery(subquery, scope)?;
                Expr::subquery(plan, SubqueryKind::Exists { negated: *negated }, correlated, outer_refs, SqlType::Bool)
            }
            E::Subquery(q) => {
                let (plan, correlated, outer_refs) = self.plan_subquery(q, scope)?;
                let cols = plan.columns();
                if cols.len() != 1 {
                    bail!(Syntax, "subquery must return only one column");
                }
                let ty = if cols[0].ty == SqlType::Unknown { SqlType::Text } else { cols[0].ty };
                Expr::subquery(plan, SubqueryKind::Scalar, correlated, outer_refs, ty)
            }
            E::AnyOp { left, compare_op, right, .. } | E::AllOp { left, compare_op, right } => {
                let all = matches!(e, E::AllOp { .. });
                let x = self.bind_expr(left, scope, agg)?;
                let op = binop(compare_op)?;
                match right.as_ref() {
                    E::Subquery(q) => {
                        let (plan, correlated, outer_refs) = self.plan_subquery(q, scope)?;
                        let sty = plan.columns()[0].ty;
                        let ty = comparable(x.ty(), sty).ok_or_else(|| {
                            err!(UndefinedFunction, "operator does not exist: {} = {}", x.ty(), sty).with_hint(
                                "No operator matches the given name and argument types. You might need to add explicit type casts.",
                            )
                        })?;
                        let plan = cast_plan_column(plan, ty);
                        Expr::subquery(
                            plan,
                            SubqueryKind::Quantified { expr: Box::new(coerce(x, ty)?), op, all },
                            correlated,
                            outer_refs,
                            SqlType::Bool,
                        )
                    }
                    // x = ANY (ARRAY[a, b]) is x IN (a, b); x <> ALL (...) is
                    // NOT IN (SQLAlchemy's catalog queries use them).
                    E::Array(ast::Array { elem, .. })
                        if !elem.is_empty() && ((!all && matches!(op, BinOp::Eq)) || (all && matches!(op, BinOp::NotEq))) =>
                    {
                        let items: Vec<Expr> = elem.iter().map(|i| self.bind_expr(i, scope, agg)).collect::<Result<_>>()?;
                        let mut ty = x.ty();
                        for i in &items {
                            ty = comparable(ty, i.ty()).ok_or_else(|| {
                                err!(UndefinedFunction, "operator does not exist: {} = {}", x.ty(), i.ty()).with_hint(
                                    "No operator matches the given name and argument types. You might need to add explicit type casts.",
                                )
                            })?;
                        }
                        let x = coerce(x, ty)?;
                        let items = items.into_iter().map(|i| coerce(i, ty)).collect::<Result<_>>()?;
                        Expr::InList { expr: Box::new(x), list: items, negated: all }
                    }
                    other => {
                        // x op ANY(array): the elements compared as the
                        // common type of x and the array's element type (an
                        // untyped array literal takes x's type).
                        let arr = self.bind_expr(other, scope, agg)?;
                        // A parameter here is an array of x's type (drivers
                        // send lists as arrays).
                        if let Some(t) = x.ty().array_of().filter(|_| x.ty() != SqlType::Unknown) {
                            self.infer_param(&arr, t);
                        }
                        let ety = arr.ty().elem().unwrap_or(SqlType::Unknown);
                        let ty = comparable(x.ty(), ety).ok_or_else(|| {
                            err!(UndefinedFunction, "operator does not exist: {} {} {}", x.ty(), op.symbol(), arr.ty()).with_hint(
                                "No operator matches the given name and argument types. You might need to add explicit type casts.",
                            )
                        })?;
                        let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
                        let arr = coerce(arr, SqlType::Text)?;
                        let x = coerce(x, ty)?;
                        Expr::Func {
                            name: format!("array_{}:{}", if all { "all" } else { "any" }, op.symbol()),
                            args: vec![x, arr],
                            ty: SqlType::Bool,
                        }
                    }
                }
            }
            E::Like { negated, expr, pattern, escape_char, .. } | E::ILike { negated, expr, pattern, escape_char, .. } => {
                let mut x = self.bind_expr(expr, scope, agg)?;
                let mut p = self.bind_expr(pattern, scope, agg)?;
                // bytea LIKE bytea: each byte as one character.
                if x.ty() == SqlType::Bytea {
                    x = self.call("bytea_latin1", vec![x])?;
                    p = self.call("bytea_latin1", vec![coerce(p, SqlType::Bytea)?])?;
                }
                // ESCAPE c: the pattern rewritten to the default escape.
                if let Some(esc) = escape_char {
                    let esc = self.bind_expr(esc, scope, agg)?;
                    let esc = if esc.ty() == SqlType::Bytea { self.call("bytea_latin1", vec![esc])? } else { coerce(esc, SqlType::Text)? };
                    p = self.call("like_escape", vec![coerce(p, SqlType::Text)?, esc])?;
                }
                Expr::Like {
                    expr: Box::new(coerce(x, SqlType::Text)?),
                    pattern: Box::new(coerce(p, SqlType::Text)?),
                    negated: *negated,
                    case_insensitive: matches!(e, E::ILike { .. }),
                }
            }
            E::Case { operand, conditions, else_result, .. } => {
                let op = operand.as_ref().map(|o| self.bind_expr(o, scope, agg)).transpose()?;
                let mut whens = Vec::new();
                let mut ty = SqlType::Unknown;
                let mut op_ty = op.as_ref().map(|o| o.ty());
                for c in conditions {
                    let w = self.bind_expr(&c.condition, scope, agg)?;
                    if let Some(ot) = op_ty {
                        op_ty = Some(
                            comparable(ot, w.ty())
                                .ok_or_else(|| err!(DatatypeMismatch, "CASE types {} and {} cannot be matched", ot, w.ty()))?,
                        );
                    }
                    let t = self.bind_expr(&c.result, scope, agg)?;
                    ty = SqlType::common(ty, t.ty())
                        .ok_or_else(|| err!(DatatypeMismatch, "CASE types {} and {} cannot be matched", ty, t.ty()))?;
                    whens.push((w, t));
                }
                let else_e = else_result.as_ref().map(|x| self.bind_expr(x, scope, agg)).transpose()?;
                if let Some(x) = &else_e {
                    ty = SqlType::common(ty, x.ty())
                        .ok_or_else(|| err!(DatatypeMismatch, "CASE types {} and {} cannot be matched", ty, x.ty()))?;
                }
                if ty == SqlType::Unknown {
                    ty = SqlType::Text;
                }
                if op_ty.is_some_and(SqlType::is_base) {
                    // Its WHENs would compare by the representation, not by the type's `=`.
                    bail!(FeatureNotSupported, "CASE over a value of a user-defined base type is not supported");
                }
                let op = match (op, op_ty) {
                    (Some(o), Some(t)) => Some(Box::new(coerce(o, t)?)),
                    _ => None,
                };
                let whens = whens
                    .into_iter()
                    .map(|(w, t)| Ok((if let Some(ot) = op_ty { coerce(w, ot)? } else { coerce(w, SqlType::Bool)? }, coerce(t, ty)?)))
                    .collect::<Result<_>>()?;
                let case = Expr::Case { operand: op, whens, else_expr: else_e.map(|x| coerce(x, ty)).transpose()?.map(Box::new), ty };
                super::srf::refuse_in_conditional(&[&case], "CASE")?;
                case
            }
            E::Function(f) => self.bind_function(f, scope, agg)?,
            // ARRAY[a, b]: arrays are values in their text form here (`{a,b}`).
            E::Array(ast::Array { elem, .. }) => {
                let items: Vec<Expr> = elem.iter().map(|i| self.bind_expr(i, scope, agg)).collect::<Result<_>>()?;
                let mut ty = SqlType::Unknown;
                for i in &items {
                    ty = SqlType::common(ty, i.ty())
                        .ok_or_else(|| err!(DatatypeMismatch, "ARRAY types {ty} and {} cannot be matched", i.ty()))?;
                }
                let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
                let aty = ty.array_of().ok_or_else(|| err!(FeatureNotSupported, "multidimensional arrays are not supported"))?;
                let args = items.into_iter().map(|i| coerce(i, ty)).collect::<Result<_>>()?;
                Expr::Func { name: "array_text".into(), args, ty: aty }
            }
            E::Extract { field, expr, .. } => {
                let x = self.bind_expr(expr, scope, agg)?;
                let x = if x.ty() == SqlType::Unknown { coerce(x, SqlType::Timestamp)? } else { x };
                let field = field.to_string().to_lowercase();
                self.call("extract", vec![Expr::lit(Value::Text(field), SqlType::Text), x])?
            }
            E::Floor { expr, .. } | E::Ceil { expr, .. } => {
                let x = self.bind_expr(expr, scope, agg)?;
                self.call(if matches!(e, E::Floor { .. }) { "floor" } else { "ceil" }, vec![x])?
            }
            // substring(x from pattern): a POSIX regular expression;
            // substring(x from pattern for escape): SQL99's SIMILAR form.
            E::Substring { expr, substring_from: Some(from), substring_for, .. }
                if self.bind_expr(from, scope, agg)?.ty().is_text()
                    && substring_for.as_ref().map(|f| self.bind_expr(f, scope, agg)).transpose()?.is_none_or(|f| f.ty().is_text()) =>
            {
                let x = coerce(self.bind_expr(expr, scope, agg)?, SqlType::Text)?;
                let p = coerce(self.bind_expr(from, scope, agg)?, SqlType::Text)?;
                match substring_for {
                    Some(f) => self.call("substring_similar", vec![x, p, coerce(self.bind_expr(f, scope, agg)?, SqlType::Text)?])?,
                    None => self.call("substring_regex", vec![x, p])?,
                }
            }
            E::SimilarTo { negated, expr, pattern, escape_char } => {
                let x = coerce(self.bind_expr(expr, scope, agg)?, SqlType::Text)?;
                let mut pargs = vec![coerce(self.bind_expr(pattern, scope, agg)?, SqlType::Text)?];
                if let Some(esc) = escape_char {
                    pargs.push(coerce(self.bind_expr(esc, scope, agg)?, SqlType::Text)?);
                }
                let re = self.call("similar_to_escape", pargs)?;
                let m = Expr::Func { name: "regex_match".into(), args: vec![x, re], ty: SqlType::Bool };
                if *negated {
                    Expr::Not(Box::new(m))
                } else {
                    m
                }
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![text_or_bytea(self.bind_expr(expr, scope, agg)?)?];
                args.push(coerce(
                    match substring_from {
                        Some(f) => self.bind_expr(f, scope, agg)?,
                        None => Expr::lit(Value::Int(1), SqlType::Int4),
                    },
                    SqlType::Int8,
                )?);
                if let Some(f) = substring_for {
                    args.push(coerce(self.bind_expr(f, scope, agg)?, SqlType::Int8)?);
                }
                self.call("substr", args)?
            }
            E::Trim { expr, trim_where, trim_what, .. } => {
                let mut args = vec![text_or_bytea(self.bind_expr(expr, scope, agg)?)?];
                if let Some(w) = trim_what {
                    let w = self.bind_expr(w, scope, agg)?;
                    args.push(if args[0].ty() == SqlType::Bytea { coerce(w, SqlType::Bytea)? } else { coerce(w, SqlType::Text)? });
                }
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                self.call(name, args)?
            }
            E::Position { expr, r#in } => {
                let sub = self.bind_expr(expr, scope, agg)?;
                let s = self.bind_expr(r#in, scope, agg)?;
                self.call("strpos", vec![s, sub])?
            }
            E::Overlay { expr, overlay_what, overlay_from, overlay_for } => {
                let mut args = vec![self.bind_expr(expr, scope, agg)?, self.bind_expr(overlay_what, scope, agg)?];
                args.push(self.bind_expr(overlay_from, scope, agg)?);
                if let Some(f) = overlay_for {
                    args.push(self.bind_expr(f, scope, agg)?);
                }
                self.call("overlay", args)?
            }
            E::AtTimeZone { timestamp, time_zone } => {
                let ts = self.bind_expr(timestamp, scope, agg)?;
                // A bare literal is a timestamptz, as in PostgreSQL.
                let ts = match ts.ty() {
                    SqlType::Text | SqlType::Unknown | SqlType::Date => coerce(ts, SqlType::TimestampTz)?,
                    _ => ts,
                };
                let zone = coerce(self.bind_expr(time_zone, scope, agg)?, SqlType::Text)?;
                self.call("timezone", vec![zone, ts])?
            }
            E::Interval(iv) => {
                let s = match iv.value.as_ref() {
                    E::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                };
                match interval_typmod(iv) {
                    Some((range, precision)) => {
                        Expr::lit(Value::Interval(crate::types::interval_input::interval_in(&s, range, precision)?), SqlType::Interval)
                    }
                    // A unit PostgreSQL's grammar lacks (`WEEK`): read as a unit word.
                    None => {
                        let s = format!("{s} {}", iv.leading_field.as_ref().expect("typmod without a field"));
                        Expr::lit(parse_text_as(&s, SqlType::Interval)?, SqlType::Interval)
                    }
                }
            }
            // A row value: its text form, as a set-returning call's record.
            E::Tuple(items) => self.bind_row(items, scope, agg)?,
            // `t.*` as a value (`VALUES (t.*)`, `t.* IN (…)`): t's whole row.
            E::QualifiedWildcard(name, _) if name.0.len() == 1 => match name.0[0].as_ident() {
                Some(i) => self.bind_expr(&E::Identifier(i.clone()), scope, agg)?,
                None => bail!(FeatureNotSupported, "expression {e} is not supported"),
            },
            other => bail!(FeatureNotSupported, "expression {other} is not supported"),
        })
    }

    fn bind_value(&self, v: &ast::Value) -> Result<Expr> {
        Ok(match v {
            ast::Value::Number(n, _) => {
                let (v, ty) = parse_number(n)?;
                Expr::lit(v, ty)
            }
            ast::Value::SingleQuotedString(s)
            | ast::Value::EscapedStringLiteral(s)
            | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
                Expr::lit(Value::Text(s.clone()), SqlType::Unknown)
            }
            ast::Value::Boolean(b) => Expr::lit(Value::Bool(*b), SqlType::Bool),
            ast::Value::Null => Expr::lit(Value::Null, SqlType::Unknown),
            ast::Value::Placeholder(p) => {
                let idx: usize = p.trim_start_matches('$').parse().map_err(|_| err!(Syntax, "bad parameter {p}"))?;
                if idx == 0 {
                    bail!(Syntax, "there is no parameter $0");
                }
                let i = idx - 1;
                let mut params = self.params.borrow_mut();
                if params.types.len() <= i {
                    params.types.resize(i + 1, None);
                }
                let ty = params.types[i];
                match &params.values {
                    Some(vals) => {
                        let v = vals.get(i).cloned().ok_or_else(|| err!(Syntax, "there is no parameter ${idx}"))?;
                        match ty {
                            // Text parameters stay untyped so context decides, as PostgreSQL's unknown.
                            Some(t) if !t.is_text() => Expr::lit(v, t),
                            _ => Expr::lit(v.clone(), if matches!(v, Value::Text(_)) { SqlType::Unknown } else { v.natural_type() }),
                        }
                    }
                    None => Expr::Param { index: i, ty: ty.unwrap_or(SqlType::Unknown) },
                }
            }
            other => bail!(FeatureNotSupported, "literal {other} is not supported"),
        })
    }

    /// Record the inferred type of parameters met in a typed context.
    /// Bind an operand; a cast to a reg* type in it is its OID when
    /// `want_oid` (compared with `oid` columns or cast to an integer).
    pub(super) fn bind_reg_operand(&self, e: &ast::Expr, scope: &Scope, agg: Option<&AggCollector>, want_oid: bool) -> Result<Expr> {
        match super::regtypes::reg_cast(e) {
            Some((inner, kind, lenient)) if want_oid || lenient => {
                let inner = self.bind_expr(inner, scope, agg)?;
                self.infer_param(&inner, SqlType::Text);
                if lenient {
                    self.bind_reg_lenient(inner, kind, want_oid)
                } else {
                    self.bind_reg_cast(inner, kind, true)
                }
            }
            _ => self.bind_expr(e, scope, agg),
        }
    }

    pub(super) fn infer_param(&self, e: &Expr, ty: SqlType) {
        if let Expr::Param { index, ty: SqlType::Unknown } = e {
            let mut p = self.params.borrow_mut();
            if p.types[*index].is_none() && ty != SqlType::Unknown {
                p.types[*index] = Some(ty);
            }
        }
    }

    /// Bring two operands to their common type.
    pub fn unify(&self, l: Expr, r: Expr, what: &str) -> Result<(Expr, Expr)> {
        self.infer_param(&l, r.ty());
        self.infer_param(&r, l.ty());
        let (lt, rt) = (l.ty(), r.ty());
        let ty = match (lt, rt) {
            (SqlType::Unknown, SqlType::Unknown) => SqlType::Text,
            _ => comparable(lt, rt).ok_or_else(|| {
                err!(UndefinedFunction, "operator does not exist: {} {} {}", lt, what, rt)
                    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
            })?,
        };
        Ok((coerce(l, ty)?, coerce(r, ty)?))
    }

    pub fn bind_binary(&self, op: &BO, l: Expr, r: Expr) -> Result<Expr> {
        // Bitwise operators are PostgreSQL's int*and / int*or / int*xor functions.
        let bitwise = match op {
            BO::BitwiseAnd => Some("int8and"),
            BO::BitwiseOr => Some("int8or"),
            BO::PGBitwiseXor => Some("int8xor"),
            BO::PGBitwiseShiftLeft => Some("int8shl"),
            BO::PGBitwiseShiftRight => Some("int8shr"),
            _ => None,
        };
        if let Some(f) = bitwise {
            let (lt, rt) = (l.ty(), r.ty());
            return self.call(f, vec![l, r]).map_err(|_| {
                err!(UndefinedFunction, "operator does not exist: {lt} {op} {rt}")
                    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
            });
        }
        let bop = binop(op)?;
        match bop {
            BinOp::And | BinOp::Or => {
                let l = coerce(l, SqlType::Bool)?;
                let r = coerce(r, SqlType::Bool)?;
                if l.ty() != SqlType::Bool || r.ty() != SqlType::Bool {
                    bail!(DatatypeMismatch, "argument of {} must be type boolean", if bop == BinOp::And { "AND" } else { "OR" });
                }
                Ok(Expr::Binary { op: bop, left: Box::new(l), right: Box::new(r), ty: SqlType::Bool })
            }
            BinOp::Concat if l.ty().is_array() || r.ty().is_array() => self.bind_array_concat(l, r),
            BinOp::Concat
                if matches!((l.ty(), r.ty()), (SqlType::Bytea, SqlType::Bytea | SqlType::Unknown) | (SqlType::Unknown, SqlType::Bytea)) =>
            {
                self.call("byteacat", vec![l, r])
            }
            BinOp::Concat => {
                // PostgreSQL's `||` needs text on one side (anynonarray || text); two numbers,
                // booleans or dates have no such operator.
                let plain = |t: SqlType| t.is_numeric() || t == SqlType::Bool || t == SqlType::Date || t.is_timestamp();
                if plain(l.ty()) && plain(r.ty()) {
                    return Err(err!(UndefinedFunction, "operator does not exist: {} || {}", l.ty(), r.ty())
                        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
                }
                let l = coerce(l, SqlType::Text)?;
                let r = coerce(r, SqlType::Text)?;
                Ok(Expr::Binary { op: bop, left: Box::new(l), right: Box::new(r), ty: SqlType::Text })
            }
            _ if bop.is_comparison() => {
                let sym = op.to_string();
                let (l, r) = self.unify(l, r, &sym)?;
                // Arrays compare element by element (their text forms do not
                // order as their elements do).
                if l.ty().is_array() && r.ty().is_array() {
                    return Ok(Expr::Func { name: format!("array_cmp:{}", bop.symbol()), args: vec![l, r], ty: SqlType::Bool });
                }
                Ok(Expr::Binary { op: bop, left: Box::new(l), right: Box::new(r), ty: SqlType::Bool })
            }
            _ => {
                let (lt, rt) = (l.ty(), r.ty());
                // Time arithmetic.
                if lt.is_timestamp()
                    || rt.is_timestamp()
                    || lt == SqlType::Interval
                    || rt == SqlType::Interval
                    || lt == SqlType::Date
                    || rt == SqlType::Date
                    || matches!(lt, SqlType::Time | SqlType::TimeTz)
                    || matches!(rt, SqlType::Time | SqlType::TimeTz)
                {
                    return self.bind_temporal(bop, l, r);
                }
                self.infer_param(&l, rt);
                self.infer_param(&r, lt);
                let (lt, rt) = (
                    if lt == SqlType::Unknown && rt.is_numeric() { rt } else { lt },
                    if rt == SqlType::Unknown && lt.is_numeric() { lt } else { rt },
                );
                let (lt, rt) =
                    (if lt == SqlType::Unknown { SqlType::Float8 } else { lt }, if rt == SqlType::Unknown { SqlType::Float8 } else { rt });
                if !lt.is_numeric() || !rt.is_numeric() {
                    return Err(err!(UndefinedFunction, "operator does not exist: {} {} {}", lt, op, rt)
                        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
                }
                let ty = SqlType::common(lt, rt).unwrap();
                let l = coerce(l, ty)?;
                let r = coerce(r, ty)?;
                Ok(Expr::Binary { op: bop, left: Box::new(l), right: Box::new(r), ty })
            }
        }
    }

    fn bind_temporal(&self, op: BinOp, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        use SqlType::*;
        let sym = match op {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            _ => "%",
        };
        let no_op = || {
            err!(UndefinedFunction, "operator does not exist: {} {} {}", lt, sym, rt)
                .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
        };
        let bin = |op, l, r, ty| Ok(Expr::Binary { op, left: Box::new(l), right: Box::new(r), ty });
        match (op, lt, rt) {
            (BinOp::Add | BinOp::Sub, Timestamp | TimestampTz, Interval | Unknown) => bin(op, l, coerce(r, Interval)?, lt),
            (BinOp::Add, Interval | Unknown, Timestamp | TimestampTz) => bin(op, r, coerce(l, Interval)?, rt),
            (BinOp::Sub, Timestamp | TimestampTz, Timestamp | TimestampTz) => {
                let ty = SqlType::common(lt, rt).unwrap_or(lt);
                bin(op, coerce(l, ty)?, coerce(r, ty)?, Interval)
            }
            (BinOp::Add | BinOp::Sub, Interval, Interval | Unknown) => bin(op, l, coerce(r, Interval)?, Interval),
            (BinOp::Add, Unknown, Interval) => bin(op, coerce(l, Interval)?, r, Interval),
            (BinOp::Add | BinOp::Sub, Date, x) if x.is_integer() => bin(op, l, r, Date),
            (BinOp::Add, x, Date) if x.is_integer() => bin(op, r, l, Date),
            (BinOp::Sub, Date, Date) => bin(op, l, r, Int4),
            (BinOp::Add | BinOp::Sub, Date, Interval) => bin(op, Expr::Cast { expr: Box::new(l), ty: Timestamp }, r, Timestamp),
            (BinOp::Add, Interval, Date) => bin(op, Expr::Cast { expr: Box::new(r), ty: Timestamp }, l, Timestamp),
            (BinOp::Add | BinOp::Sub, Date, Unknown) => {
                // PostgreSQL resolves date ± unknown as date ± integer.
                bin(op, l, coerce(r, Int4)?, Date)
            }
            // time ± interval wraps around midnight; time - time is an interval;
            // date + time is a timestamp.
            (BinOp::Sub, Time, Time) => self.call("time_mi_time", vec![l, r]),
            (BinOp::Add | BinOp::Sub, Time | TimeTz, Interval | Unknown) => {
                let f = match (lt, op) {
                    (Time, BinOp::Add) => "time_pl_interval",
                    (Time, _) => "time_mi_interval",
                    (_, BinOp::Add) => "timetz_pl_interval",
                    _ => "timetz_mi_interval",
                };
                self.call(f, vec![l, coerce(r, Interval)?])
            }
            (BinOp::Add, Interval | Unknown, Time | TimeTz) => {
                self.call(if rt == Time { "time_pl_interval" } else { "timetz_pl_interval" }, vec![r, coerce(l, Interval)?])
            }
            (BinOp::Add, Date, Time) | (BinOp::Add, Time, Date) => {
                let (d, t) = if lt == Date { (l, r) } else { (r, l) };
                bin(op, Expr::Cast { expr: Box::new(d), ty: Timestamp }, Expr::Cast { expr: Box::new(t), ty: Interval }, Timestamp)
            }
            (BinOp::Mul | BinOp::Div, Interval, x) if x.is_numeric() || x == Unknown => bin(op, l, coerce(r, Float8)?, Interval),
            (BinOp::Mul, x, Interval) if x.is_numeric() || x == Unknown => bin(op, r, coerce(l, Float8)?, Interval),
            _ => Err(no_op()),
        }
    }

    fn bind_function(&self, f: &ast::Function, scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        let name = f
            .name
            .0
            .last()
            .map(|p| match p {
                ast::ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
                _ => String::new(),
            })
            .unwrap_or_default();
        if name == "row" && f.over.is_none() {
            if let Some(items) = row_items(&ast::Expr::Function(f.clone())) {
                return self.bind_row(&items, scope, agg);
            }
            // ROW(t.*, x): t's columns are fields.
            if let ast::FunctionArguments::List(l) = &f.args {
                let mut items = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => items.push(x.clone()),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(q)) => items.extend(self.star_columns(q, scope)?),
                        other => bail!(FeatureNotSupported, "unsupported function argument {other}"),
                    }
                }
                return self.bind_row(&items, scope, agg);
            }
        }
        // row_to_json(t.*): t's columns by name (a record's text has no field names).
        if name == "row_to_json" && f.over.is_none() {
            if let ast::FunctionArguments::List(l) = &f.args {
                if let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(q))] = l.args.as_slice() {
                    let mut args = Vec::new();
                    for c in self.star_columns(q, scope)? {
                        let field = match &c {
                            ast::Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()).unwrap_or_default(),
                            _ => String::new(),
                        };
                        args.push(Expr::lit(Value::Text(field), SqlType::Text));
                        args.push(self.bind_expr(&c, scope, agg)?);
                    }
                    return self.call("row_to_json_fields", args);
                }
            }
        }
        // ORDER BY inside the call's parentheses; other clauses sqlparser
        // accepts (`WHERE`, `LIMIT` …) are not PostgreSQL's.
        let mut ordered = false;
        let mut order_by: &[ast::OrderByExpr] = &[];
        if let ast::FunctionArguments::List(list) = &f.args {
            for c in &list.clauses {
                match c {
                    ast::FunctionArgumentClause::OrderBy(keys) => {
                        ordered = true;
                        order_by = keys;
                    }
                    other => bail!(Syntax, "syntax error at or near \"{other}\""),
                }
            }
        }
        if ordered && f.over.is_some() {
            bail!(FeatureNotSupported, "aggregate ORDER BY is not implemented for window functions");
        }
        // User-defined aggregates (`user_agg.rs`); built-in names win.
        let user_aggs = if agg_func(&name).is_none() && f.over.is_none() && !crate::exec::functions::registry().exists(&name) {
            self.user_aggregates(&f.name)
        } else {
            vec![]
        };
        if ordered && agg_func(&name).is_none() && user_aggs.is_empty() && f.within_group.is_empty() {
            bail!(WrongObjectType, "ORDER BY specified, but {name} is not an aggregate function");
        }
        if ordered && matches!(agg_func(&name), Some(AggFunc::First | AggFunc::Last)) {
            return Err(err!(FeatureNotSupported, "ORDER BY in {name}() is not supported").with_hint(format!("{name}(x, t) orders by t")));
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (vec![], false, false),
            ast::FunctionArguments::Subquery(q) if name == "array" => {
                let (plan, correlated, outer_refs) = self.plan_subquery(q, scope)?;
                let cols = plan.columns();
                if cols.len() != 1 {
                    bail!(Syntax, "subquery must return only one column");
                }
                let ty = cols[0].ty.array_of().unwrap_or(SqlType::Array(crate::types::Elem::Text));
                return Ok(Expr::subquery(plan, SubqueryKind::Array, correlated, outer_refs, ty));
            }
            ast::FunctionArguments::Subquery(_) => bail!(FeatureNotSupported, "function over a subquery is not supported"),
            ast::FunctionArguments::List(list) => {
                let distinct = matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                let mut star = false;
                let mut args = Vec::new();
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => args.push(x.clone()),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        ast::FunctionArg::Named { arg: ast::FunctionArgExpr::Expr(x), .. }
                        | ast::FunctionArg::ExprNamed { arg: ast::FunctionArgExpr::Expr(x), .. } => args.push(x.clone()),
                        // A whole-row argument `t.*`: t's row as a record, NULL
                        // when every column is (an outer join's missing row).
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(q)) => {
                            let fields = self.star_columns(q, scope)?;
                            let all_null = fields
                                .iter()
                                .map(|c| ast::Expr::IsNull(Box::new(c.clone())))
                                .reduce(|a, b| ast::Expr::BinaryOp { left: Box::new(a), op: BO::And, right: Box::new(b) })
                                .ok_or_else(|| {
                                    err!(FeatureNotSupported, "whole-row reference to a relation with no columns is not supported")
                                })?;
                            args.push(ast::Expr::Case {
                                case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                                end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                                operand: None,
                                conditions: vec![ast::CaseWhen { condition: all_null, result: ast::Expr::Value(ast::Value::Null.into()) }],
                                else_result: Some(Box::new(ast::Expr::Tuple(fields))),
                            });
                        }
                        _ => bail!(FeatureNotSupported, "unsupported function argument {a}"),
                    }
                }
                (args, distinct, star)
            }
        };
        // `f(…, VARIADIC arr)`: the array's elements are the last arguments.
        let args = match spread_variadic(args)? {
            Spread::Args(args) => args,
            // concat / concat_ws over a NULL array are NULL, as in PostgreSQL.
            Spread::Null(_) if matches!(name.as_str(), "concat" | "concat_ws") => return Ok(Expr::lit(Value::Null, SqlType::Text)),
            // format(f, VARIADIC NULL) formats with no arguments.
            Spread::Null(args) if name == "format" => args,
            Spread::Null(_) => return Err(err!(FeatureNotSupported, "VARIADIC NULL in {name}() is not supported")),
        };
        if !user_aggs.is_empty() {
            return self.bind_user_aggregate(&name, user_aggs, &args, star, distinct, ordered, f.filter.as_deref(), scope, agg);
        }
        if !f.within_group.is_empty() && f.over.is_none() {
            let call = super::ordered_set::CallParts { args: &args, distinct, ordered, filter: f.filter.as_deref() };
            return self.bind_ordered_set(&name, call, &f.within_group, scope, agg);
        }
        super::ordered_set::check_needs_within_group(&name, f)?;
        if let Some(over) = &f.over {
            let (mut args, mut star, mut filter) = (args, star, f.filter.as_deref());
            if let (Some(cond), Some(_)) = (filter, agg_func(&name)) {
                // agg(x) FILTER (WHERE c) OVER w folds CASE WHEN c THEN x END: the rows the
                // condition leaves out are NULLs, which aggregates skip (count(*) counts 1s).
                let value = if star {
                    ast::Expr::value(ast::Value::Number("1".into(), false))
                } else {
                    args.first().cloned().unwrap_or(ast::Expr::value(ast::Value::Null))
                };
                let case = ast::Expr::Case {
                    case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                    end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                    operand: None,
                    conditions: vec![ast::CaseWhen { condition: cond.clone(), result: value }],
                    else_result: None,
                };
                if star || args.is_empty() {
                    args = vec![case];
                } else {
                    args[0] = case;
                }
                star = false;
                filter = None;
            } else if filter.is_some()
                && matches!(
                    name.as_str(),
                    "row_number"
                        | "rank"
                        | "dense_rank"
                        | "percent_rank"
                        | "cume_dist"
                        | "ntile"
                        | "lag"
                        | "lead"
                        | "first_value"
                        | "last_value"
                        | "nth_value"
                )
            {
                bail!(FeatureNotSupported, "FILTER is not implemented for non-aggregate window functions");
            }
            return self.bind_window(&name, &args, star, distinct, filter, over, scope, agg);
        }
        let args = if name == "make_interval" { make_interval_args(f, args)? } else { args };
        if matches!(name.as_str(), "to_regclass" | "to_regtype" | "to_regnamespace") && args.len() == 1 {
            return self.bind_reg_operand(&ast::Expr::Function(f.clone()), scope, agg, false);
        }
        // The boolean comparison functions behind `=` / `<>` (booleq, boolne).
        if let ("booleq" | "boolne", [a, b]) = (name.as_str(), args.as_slice()) {
            let a = coerce(self.bind_expr(a, scope, agg)?, SqlType::Bool)?;
            let b = coerce(self.bind_expr(b, scope, agg)?, SqlType::Bool)?;
            return self.bind_binary(if name == "booleq" { &BO::Eq } else { &BO::NotEq }, a, b);
        }
        if let Some(e) = self.bind_catalog_function(&name, &args, scope, agg)? {
            return Ok(e);
        }
        if name == "enum_range" {
            if let Some(e) = self.bind_enum_range(&args)? {
                return Ok(e);
            }
        }
        if let Some(e) = self.bind_privilege_function(&name, &args, scope, agg)? {
            return Ok(e);
        }
        if let Some(func) = agg_func(&name) {
            let Some(collector) = agg else {
                bail!(Grouping, "aggregate functions are not allowed here");
            };
            // Arguments of an aggregate may not contain aggregates.
            let mut bound: Vec<Expr> = args.iter().map(|a| self.bind_expr(a, scope, None)).collect::<Result<_>>()?;
            if matches!(func, AggFunc::First | AggFunc::Last) {
                first_last_time(&name, &mut bound, collector)?;
            }
            super::srf::refuse_in_call(&bound, "aggregate")?;
            let func = if func == AggFunc::Count && star { AggFunc::CountStar } else { func };
            if func != AggFunc::CountStar && bound.is_empty() {
                if func == AggFunc::Count {
                    bail!(WrongObjectType, "count(*) must be used to call a parameterless aggregate function");
                }
                return Err(crate::exec::functions::registry::no_such_function(&name, &[]));
            }
            let arg_ty = bound.first().map(|b| b.ty()).unwrap_or(SqlType::Int8);
            let ty = match func {
                AggFunc::CountStar | AggFunc::Count => SqlType::Int8,
                AggFunc::Sum => {
                    // sum(int8) and sum(numeric) are numeric, as in PostgreSQL.
                    if arg_ty == SqlType::Int8 || arg_ty == SqlType::Numeric {
                        SqlType::Numeric
                    } else if arg_ty.is_integer() {
                        SqlType::Int8
                    } else if arg_ty.is_float() || arg_ty == SqlType::Unknown {
                        if arg_ty == SqlType::Float4 {
                            SqlType::Float4
                        } else {
                            SqlType::Float8
                        }
                    } else if arg_ty == SqlType::Interval {
                        SqlType::Interval
                    } else {
                        return Err(crate::exec::functions::registry::no_such_function("sum", &[arg_ty]));
                    }
                }
                AggFunc::Avg if arg_ty == SqlType::Interval => SqlType::Interval,
                AggFunc::Avg | AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::VarPop | AggFunc::VarSamp => {
                    if !arg_ty.is_numeric() && arg_ty != SqlType::Unknown {
                        return Err(crate::exec::functions::registry::no_such_function(&name, &[arg_ty]));
                    }
                    // avg, variance and stddev of integers or numerics are
                    // numeric, as in PostgreSQL.
                    if arg_ty.is_integer() || arg_ty == SqlType::Numeric {
                        SqlType::Numeric
                    } else {
                        SqlType::Float8
                    }
                }
                AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
                    if arg_ty == SqlType::Unknown {
                        SqlType::Text
                    } else {
                        arg_ty
                    }
                }
                AggFunc::MinCount | AggFunc::MaxCount | AggFunc::SumExact | AggFunc::User(_) | AggFunc::OrderedSet(_) => {
                    unreachable!("internal, user-defined and ordered-set aggregates are not named by agg_func")
                }
                AggFunc::Regr(r) => {
                    // f(float8, float8): numbers and unknown literals are cast.
                    let tys: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
                    if tys.len() != 2 || tys.iter().any(|t| !t.is_numeric() && *t != SqlType::Unknown) {
                        return Err(crate::exec::functions::registry::no_such_function(&name, &tys));
                    }
                    for b in bound.iter_mut() {
                        *b = coerce(b.clone(), SqlType::Float8)?;
                    }
                    if r == crate::exec::plan::RegrFunc::Count {
                        SqlType::Int8
                    } else {
                        SqlType::Float8
                    }
                }
                AggFunc::BoolAnd | AggFunc::BoolOr => {
                    if arg_ty != SqlType::Bool && arg_ty != SqlType::Unknown {
                        bail!(UndefinedFunction, "function {name}({arg_ty}) does not exist");
                    }
                    SqlType::Bool
                }
                AggFunc::ArrayAgg => {
                    if arg_ty == SqlType::Unknown {
                        bound[0] = coerce(bound[0].clone(), SqlType::Text)?;
                    }
                    arg_ty
                        .array_of()
                        .ok_or_else(|| err!(FeatureNotSupported, "array_agg over arrays (multidimensional arrays) is not supported"))?
                }
                AggFunc::StringAgg => {
                    // string_agg(text, text) and string_agg(bytea, bytea):
                    // other types have no such function.
                    let tys: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
                    let bytea = tys.contains(&SqlType::Bytea);
                    let fits = |t: &SqlType| *t == SqlType::Unknown || if bytea { *t == SqlType::Bytea } else { t.is_text() };
                    if tys.len() != 2 || !tys.iter().all(fits) {
                        let names: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
                        bail!(UndefinedFunction, "function {name}({}) does not exist", names.join(", "));
                    }
                    let ty = if bytea { SqlType::Bytea } else { SqlType::Text };
                    for b in bound.iter_mut() {
                        if b.ty() == SqlType::Unknown {
                            *b = coerce(b.clone(), ty)?;
                        }
                    }
                    ty
                }
            };
            if matches!(func, AggFunc::BoolAnd | AggFunc::BoolOr) && arg_ty == SqlType::Unknown {
                bound[0] = coerce(bound[0].clone(), SqlType::Bool)?;
            }
            if matches!(func, AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last) && arg_ty == SqlType::Unknown {
                bound[0] = coerce(bound[0].clone(), SqlType::Text)?;
            }
            if matches!(func, AggFunc::Sum | AggFunc::Avg) && arg_ty == SqlType::Unknown {
                bound[0] = coerce(bound[0].clone(), SqlType::Float8)?;
            }
            // ORDER BY inside the call matters to string_agg and array_agg
            // only (the others answer the same in any order): its keys
            // follow the arguments, each with its direction (`AggCall`).
            if ordered && matches!(func, AggFunc::StringAgg | AggFunc::ArrayAgg) {
                let value_args = bound.len();
                for o in order_by {
                    let k = self.bind_expr(&o.expr, scope, None)?;
                    super::srf::refuse_in_call(std::slice::from_ref(&k), "aggregate")?;
                    let k = if k.ty() == SqlType::Unknown { coerce(k, SqlType::Text)? } else { k };
                    // With DISTINCT the rows are the distinct arguments: a key
                    // must be one of them.
                    if distinct && !bound[..value_args].contains(&k) {
                        bail!(InvalidColumnReference, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list");
                    }
                    let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                    let nulls_first = o.options.nulls_first.unwrap_or(desc);
                    bound.push(k);
                    bound.push(Expr::lit(Value::Int(AggCall::order_flags(desc, nulls_first)), SqlType::Int4));
                }
            }
            let filter = f.filter.as_ref().map(|x| self.bind_expr(x, scope, None).and_then(|e| coerce(e, SqlType::Bool))).transpose()?;
            return Ok(Expr::Agg(Box::new(AggCall { func, args: bound, distinct, filter, ty })));
        }
        let bound: Vec<Expr> = args.iter().map(|a| self.bind_expr(a, scope, agg)).collect::<Result<_>>()?;
        if matches!(name.as_str(), "regexp_matches" | "regexp_split_to_table") {
            if let Some(e) = self.bind_regexp_srf(&name, bound.clone())? {
                return Ok(e);
            }
        }
        if let Some(kind) = crate::exec::plan::SrfKind::from_name(&name) {
            if f.filter.is_some() || distinct {
                bail!(
                    WrongObjectType,
                    "{} specified, but {name} is not an aggregate function",
                    if distinct { "DISTINCT" } else { "FILTER" }
                );
            }
            return self.bind_srf(kind, &args, scope, bound);
        }
        // A user-defined SQL function (`function.rs`); built-in names win.
        if !crate::exec::functions::registry().exists(&name)
            && !super::array_ops::ARRAY_FNS.contains(&name.as_str())
            && !matches!(name.as_str(), "coalesce" | "greatest" | "least" | "nullif")
        {
            let defs = self.user_functions(&f.name);
            if !defs.is_empty() {
                if f.filter.is_some() || distinct {
                    bail!(
                        WrongObjectType,
                        "{} specified, but {name} is not an aggregate function",
                        if distinct { "DISTINCT" } else { "FILTER" }
                    );
                }
                return self.bind_user_call(&name, defs, bound, &arg_names(f), scope);
            }
        }
        // A type name called with one argument and no function of that
        // name is a cast (PostgreSQL's function-style cast: `date(now())`).
        if let (Some(data_type), [arg]) = (function_style_cast(&name, f), args.as_slice()) {
            if !crate::exec::functions::registry().exists(&name) {
                let cast = ast::Expr::Cast { kind: ast::CastKind::DoubleColon, expr: Box::new(arg.clone()), data_type, format: None };
                return self.bind_expr(&cast, scope, agg);
            }
        }
        let call =
            if super::array_ops::ARRAY_FNS.contains(&name.as_str()) { self.bind_array_fn(&name, bound)? } else { self.call(&name, bound)? };
        if f.filter.is_some() {
            bail!(WrongObjectType, "FILTER specified, but {name} is not an aggregate function");
        }
        if distinct {
            bail!(WrongObjectType, "DISTINCT specified, but {name} is not an aggregate function");
        }
        Ok(call)
    }

    /// Bind a call of a scalar function: resolve it in the function
    /// registry (42883 when nothing matches) and coerce the arguments to
    /// the chosen signature. Conditional expressions (coalesce, greatest,
    /// least, nullif) take the common type of their arguments instead.
    pub fn call(&self, name: &str, mut bound: Vec<Expr>) -> Result<Expr> {
        if matches!(name, "coalesce" | "greatest" | "least" | "nullif") {
            if name == "coalesce" {
                super::srf::refuse_in_conditional(&bound.iter().collect::<Vec<_>>(), "COALESCE")?;
            }
            if bound.is_empty() || (name == "nullif" && bound.len() != 2) {
                let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
                return Err(crate::exec::functions::registry::no_such_function(name, &types));
            }
            let mut ty = SqlType::Unknown;
            for b in bound.iter().filter(|b| b.ty() != SqlType::Unknown || !matches!(b, Expr::Literal { value: Value::Null, .. })) {
                ty = SqlType::common(ty, b.ty())
                    .ok_or_else(|| err!(DatatypeMismatch, "{} types {} and {} cannot be matched", name.to_uppercase(), ty, b.ty()))?;
            }
            if ty == SqlType::Unknown {
                ty = SqlType::Text;
            }
            bound = bound.into_iter().map(|b| coerce(b, ty)).collect::<Result<_>>()?;
            return Ok(Expr::Func { name: name.to_string(), args: bound, ty });
        }
        let types: Vec<SqlType> = bound.iter().map(|b| b.ty()).collect();
        let resolved = crate::exec::functions::registry().resolve(name, &types)?;
        for (b, want) in bound.iter_mut().zip(&resolved.params) {
            if let Some(t) = want {
                self.infer_param(b, *t);
                *b = coerce(b.clone(), *t)?;
            }
        }
        Ok(Expr::Func { name: resolved.name.to_string(), args: bound, ty: resolved.ret })
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_window(
        &self,
        name: &str,
        args: &[ast::Expr],
        star: bool,
        distinct: bool,
        filter: Option<&ast::Expr>,
        over: &ast::WindowType,
        scope: &Scope,
        agg: Option<&AggCollector>,
    ) -> Result<Expr> {
        use crate::exec::plan::{FrameExclude, SortKey, WindowCall, WindowFrame, WindowFunc};
        let Some(collector) = agg else { bail!(Grouping, "window functions are not allowed here") };
        let ast::WindowType::WindowSpec(spec) = over else { bail!(FeatureNotSupported, "named windows are not supported") };
        if distinct {
            bail!(FeatureNotSupported, "DISTINCT is not implemented for window functions");
        }
        // Arguments and keys may use aggregates (window over GROUP BY).
        let bound: Vec<Expr> = args.iter().map(|a| self.bind_expr(a, scope, Some(collector))).collect::<Result<_>>()?;
        super::srf::refuse_in_call(&bound, "window")?;
        // EXCLUDE travels as a marker partition key (`parser::window_frame`).
        let (exclusion, spec_partition) = crate::parser::frame_exclusion(&spec.partition_by);
        let partition_by = spec_partition.iter().map(|e| self.bind_expr(e, scope, Some(collector))).collect::<Result<Vec<_>>>()?;
        let mut order_by = Vec::new();
        for o in &spec.order_by {
            let e = self.bind_expr(&o.expr, scope, Some(collector))?;
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            order_by.push(SortKey { expr: e, desc, nulls_first: o.options.nulls_first.unwrap_or(desc) });
        }
        let exclude = match exclusion {
            None => FrameExclude::NoOthers,
            Some(crate::parser::FrameExclusion::CurrentRow) => FrameExclude::CurrentRow,
            Some(crate::parser::FrameExclusion::Group) => FrameExclude::Group,
            Some(crate::parser::FrameExclusion::Ties) => FrameExclude::Ties,
        };
        let frame = match &spec.window_frame {
            None if exclude == FrameExclude::NoOthers => WindowFrame::Default,
            // Only a hand-written marker gets here: the default frame, with its exclusion.
            None => {
                let default = ast::WindowFrame {
                    units: ast::WindowFrameUnits::Range,
                    start_bound: ast::WindowFrameBound::Preceding(None),
                    end_bound: None,
                };
                self.bind_frame(&default, &order_by, scope, exclude)?
            }
            Some(fr) => self.bind_frame(fr, &order_by, scope, exclude)?,
        };
        let arg_ty = bound.first().map(|b| b.ty()).unwrap_or(SqlType::Int8);
        let (func, ty) = match name {
            "row_number" => (WindowFunc::RowNumber, SqlType::Int8),
            "rank" => (WindowFunc::Rank, SqlType::Int8),
            "dense_rank" => (WindowFunc::DenseRank, SqlType::Int8),
            "lag" => (WindowFunc::Lag, arg_ty),
            "lead" => (WindowFunc::Lead, arg_ty),
            "first_value" => (WindowFunc::FirstValue, arg_ty),
            "last_value" => (WindowFunc::LastValue, arg_ty),
            "nth_value" if bound.len() == 2 => (WindowFunc::NthValue, arg_ty),
            "ntile" if bound.len() == 1 => (WindowFunc::Ntile, SqlType::Int4),
            "percent_rank" if bound.is_empty() => (WindowFunc::PercentRank, SqlType::Float8),
            "cume_dist" if bound.is_empty() => (WindowFunc::CumeDist, SqlType::Float8),
            other => match agg_func(other) {
                Some(AggFunc::Count) if star => (WindowFunc::Agg(AggFunc::CountStar), SqlType::Int8),
                Some(a @ (AggFunc::Count | AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max)) => {
                    let ty = match a {
                        AggFunc::Count => SqlType::Int8,
                        AggFunc::Sum if arg_ty == SqlType::Int8 => SqlType::Numeric,
                        AggFunc::Sum if arg_ty.is_integer() => SqlType::Int8,
                        AggFunc::Avg if arg_ty.is_integer() => SqlType::Numeric,
                        AggFunc::Sum | AggFunc::Avg if arg_ty == SqlType::Numeric => SqlType::Numeric,
                        AggFunc::Sum | AggFunc::Avg if arg_ty == SqlType::Interval => SqlType::Interval,
                        AggFunc::Sum | AggFunc::Avg => SqlType::Float8,
                        _ => arg_ty,
                    };
                    (WindowFunc::Agg(a), ty)
                }
                // As the aggregates bind them: numeric for integers and numerics, else float8.
                Some(a @ (AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::VarPop | AggFunc::VarSamp))
                    if arg_ty.is_numeric() || arg_ty == SqlType::Unknown =>
                {
                    let ty = if arg_ty.is_integer() || arg_ty == SqlType::Numeric { SqlType::Numeric } else { SqlType::Float8 };
                    (WindowFunc::Agg(a), ty)
                }
                Some(a @ (AggFunc::BoolAnd | AggFunc::BoolOr)) if matches!(arg_ty, SqlType::Bool | SqlType::Unknown) => {
                    (WindowFunc::Agg(a), SqlType::Bool)
                }
                Some(AggFunc::ArrayAgg) if bound.len() == 1 => {
                    let elem = if arg_ty == SqlType::Unknown { SqlType::Text } else { arg_ty };
                    let ty = elem
                        .array_of()
                        .ok_or_else(|| err!(FeatureNotSupported, "array_agg over arrays (multidimensional arrays) is not supported"))?;
                    (WindowFunc::Agg(AggFunc::ArrayAgg), ty)
                }
                _ => {
                    // A user-defined aggregate over the frame (`user_agg.rs`).
                    let defs = self.user_aggregates(&ast::ObjectName::from(vec![ast::Ident::new(other)]));
                    if defs.is_empty() {
                        bail!(UndefinedFunction, "window function {other} does not exist");
                    }
                    let (func, args, ty) = self.bind_user_window_aggregate(other, defs, bound, filter, &frame, scope, collector)?;
                    return Ok(Expr::Window(Box::new(WindowCall { func: WindowFunc::Agg(func), args, partition_by, order_by, frame, ty })));
                }
            },
        };
        if matches!(func, WindowFunc::Lag | WindowFunc::Lead | WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::Agg(_))
            && bound.is_empty()
            && func != WindowFunc::Agg(AggFunc::CountStar)
        {
            bail!(UndefinedFunction, "function {name}() needs an argument");
        }
        let mut bound = bound;
        if func == WindowFunc::NthValue {
            bound[1] = coerce(bound[1].clone(), SqlType::Int8)?;
        }
        if let (WindowFunc::Agg(a), SqlType::Unknown) = (func, arg_ty) {
            match a {
                AggFunc::BoolAnd | AggFunc::BoolOr => bound[0] = coerce(bound[0].clone(), SqlType::Bool)?,
                AggFunc::ArrayAgg => bound[0] = coerce(bound[0].clone(), SqlType::Text)?,
                AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::VarPop | AggFunc::VarSamp => {
                    bound[0] = coerce(bound[0].clone(), SqlType::Float8)?
                }
                _ => {}
            }
        }
        if func == WindowFunc::Ntile {
            bound[0] = coerce(bound[0].clone(), SqlType::Int8)?;
        }
        let mut ty = ty;
        if matches!(func, WindowFunc::Lag | WindowFunc::Lead) {
            if bound.len() > 1 {
                bound[1] = coerce(bound[1].clone(), SqlType::Int8)?;
            }
            if bound.len() > 2 {
                // lag(anycompatible, integer, anycompatible): the value and the default
                // take their common type.
                let common = SqlType::common(arg_ty, bound[2].ty())
                    .ok_or_else(|| err!(UndefinedFunction, "function {name}({}, bigint, {}) does not exist", arg_ty, bound[2].ty()))?;
                let common = if common == SqlType::Unknown { SqlType::Text } else { common };
                bound[0] = coerce(bound[0].clone(), common)?;
                bound[2] = coerce(bound[2].clone(), common)?;
                ty = common;
            }
        }
        let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
        Ok(Expr::Window(Box::new(WindowCall { func, args: bound, partition_by, order_by, frame, ty })))
    }

    /// A window frame clause: PostgreSQL's checks, the two old fast paths, else a general
    /// frame whose RANGE offsets become bound expressions (`key - offset` / `key + offset`
    /// by the sort direction) compared with the ORDER BY key.
    fn bind_frame(
        &self,
        fr: &ast::WindowFrame,
        order_by: &[crate::exec::plan::SortKey],
        scope: &Scope,
        exclude: crate::exec::plan::FrameExclude,
    ) -> Result<crate::exec::plan::WindowFrame> {
        use crate::exec::plan::{FrameBound, FrameExclude, FrameUnits, GeneralFrame, WindowFrame};
        use ast::WindowFrameBound as WB;
        let end = fr.end_bound.clone().unwrap_or(WB::CurrentRow);
        if matches!(fr.start_bound, WB::Following(None)) {
            bail!(Windowing, "frame start cannot be UNBOUNDED FOLLOWING");
        }
        if matches!(end, WB::Preceding(None)) {
            bail!(Windowing, "frame end cannot be UNBOUNDED PRECEDING");
        }
        match (&fr.start_bound, &end) {
            (WB::CurrentRow, WB::Preceding(Some(_))) => bail!(Windowing, "frame starting from current row cannot have preceding rows"),
            (WB::Following(Some(_)), WB::Preceding(Some(_))) => {
                bail!(Windowing, "frame starting from following row cannot have preceding rows")
            }
            (WB::Following(Some(_)), WB::CurrentRow) => bail!(Windowing, "frame starting from following row cannot end with current row"),
            _ => {}
        }
        let units = match fr.units {
            ast::WindowFrameUnits::Rows => FrameUnits::Rows,
            ast::WindowFrameUnits::Range => FrameUnits::Range,
            ast::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        if units == FrameUnits::Groups && order_by.is_empty() {
            bail!(Windowing, "GROUPS mode requires an ORDER BY clause");
        }
        let count = |e: &ast::Expr, start: bool| -> Result<usize> {
            let nb = coerce(self.bind_expr(e, scope, None)?, SqlType::Int8)?;
            match self.eval_const(&nb)? {
                Value::Int(k) if k >= 0 => Ok(k as usize),
                Value::Int(_) => Err(err!(
                    InvalidPrecedingOrFollowingSize,
                    "frame {} offset must not be negative",
                    if start { "starting" } else { "ending" }
                )),
                _ => Err(err!(
                    InvalidPrecedingOrFollowingSize,
                    "frame {} offset must not be null",
                    if start { "starting" } else { "ending" }
                )),
            }
        };
        // The fast paths of the executor (without EXCLUDE).
        let plain = exclude == FrameExclude::NoOthers;
        if plain && units == FrameUnits::Rows && matches!(end, WB::CurrentRow) {
            match &fr.start_bound {
                WB::Preceding(None) => return Ok(WindowFrame::RowsPreceding(None)),
                WB::Preceding(Some(n)) => return Ok(WindowFrame::RowsPreceding(Some(count(n, true)?))),
                WB::CurrentRow => return Ok(WindowFrame::RowsPreceding(Some(0))),
                _ => {}
            }
        }
        if plain && units == FrameUnits::Range && matches!((&fr.start_bound, &end), (WB::Preceding(None), WB::CurrentRow)) {
            return Ok(WindowFrame::Default);
        }
        let mut range_key = None;
        let mut range_offsets = false;
        let mut bound = |b: &WB, start: bool| -> Result<FrameBound> {
            let (e, following) = match b {
                WB::Preceding(None) => return Ok(FrameBound::UnboundedPreceding),
                WB::Following(None) => return Ok(FrameBound::UnboundedFollowing),
                WB::CurrentRow => return Ok(FrameBound::CurrentRow),
                WB::Preceding(Some(e)) => (e, false),
                WB::Following(Some(e)) => (e, true),
            };
            let value = if units == FrameUnits::Range {
                let [key] = order_by else {
                    bail!(Windowing, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column");
                };
                let kt = key.expr.ty();
                let temporal = matches!(
                    kt,
                    SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz | SqlType::Interval | SqlType::Time | SqlType::TimeTz
                );
                // sqlparser reads a quoted offset as an interval literal: over a key that is
                // not a date or time it is an untyped string ('inf' PRECEDING).
                let off = match e.as_ref() {
                    ast::Expr::Interval(iv)
                        if !temporal
                            && iv.leading_field.is_none()
                            && iv.last_field.is_none()
                            && iv.leading_precision.is_none()
                            && iv.fractional_seconds_precision.is_none() =>
                    {
                        self.bind_expr(&iv.value, scope, None)?
                    }
                    _ => self.bind_expr(e, scope, None)?,
                };
                // An untyped offset takes the type PostgreSQL's in_range support gives it.
                let off = match off.ty() {
                    SqlType::Unknown if temporal => coerce(off, SqlType::Interval)?,
                    SqlType::Unknown if kt.is_float() => coerce(off, SqlType::Float8)?,
                    SqlType::Unknown if kt.is_integer() => coerce(off, SqlType::Int8)?,
                    SqlType::Unknown => coerce(off, kt)?,
                    _ => off,
                };
                // PostgreSQL's in_range functions: integer keys with integer offsets, floats
                // with float8 (or integer, cast implicitly), numerics with numeric (or integer),
                // date and time keys and intervals with interval offsets.
                let ot = off.ty();
                let number = if kt.is_integer() && ot.is_integer() {
                    Some(SqlType::Int8)
                } else if kt.is_float() && (ot.is_float() || ot.is_integer() || ot == SqlType::Numeric) {
                    Some(SqlType::Float8)
                } else if kt == SqlType::Numeric && (ot == SqlType::Numeric || ot.is_integer()) {
                    Some(SqlType::Numeric)
                } else {
                    None
                };
                if number.is_none() && !(temporal && ot == SqlType::Interval) {
                    bail!(
                        FeatureNotSupported,
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {kt} and offset type {ot}"
                    );
                }
                if let Ok(v) = self.eval_const(&off) {
                    let negative = match &v {
                        Value::Int(i) => *i < 0,
                        Value::Float(f) => *f < 0.0,
                        Value::Interval(iv) => iv.months < 0 || iv.days < 0 || iv.micros < 0,
                        Value::Text(t) if ot == SqlType::Numeric => t.trim_start().starts_with('-'),
                        _ => false,
                    };
                    if negative {
                        bail!(InvalidPrecedingOrFollowingSize, "invalid preceding or following size in window function");
                    }
                }
                if matches!(kt, SqlType::Time | SqlType::TimeTz) && ot == SqlType::Interval {
                    // in_range_time(tz)_interval: base ± the offset's time part without
                    // wrapping at midnight, so the key and the offset become integers on
                    // one ordered scale (the executor's integer in_range).
                    range_key = Some(self.call("time_range_key", vec![key.expr.clone()])?);
                    range_offsets = true;
                    let tz = Expr::lit(Value::Bool(kt == SqlType::TimeTz), SqlType::Bool);
                    self.call("time_range_offset", vec![off, tz])?
                } else if let Some(t) = number {
                    // The executor applies the offset with PostgreSQL's in_range rules.
                    range_key = Some(key.expr.clone());
                    range_offsets = true;
                    coerce(off, t)?
                } else {
                    let add = following != key.desc;
                    let b = self.bind_binary(if add { &BO::Plus } else { &BO::Minus }, key.expr.clone(), off)?;
                    if range_key.is_none() {
                        range_key = Some(coerce(key.expr.clone(), b.ty())?);
                    }
                    b
                }
            } else {
                Expr::lit(Value::Int(count(e, start)? as i64), SqlType::Int8)
            };
            Ok(if following { FrameBound::Following(value) } else { FrameBound::Preceding(value) })
        };
        let start = bound(&fr.start_bound, true)?;
        let end = bound(&end, false)?;
        Ok(WindowFrame::General(Box::new(GeneralFrame { units, start, end, range_key, range_offsets, exclude })))
    }

    /// Plan a subquery in a nested scope; returns the plan, whether it is
    /// correlated and the outer columns it reads.
    pub fn plan_subquery(&self, q: &ast::Query, scope: &Scope) -> Result<(LogicalPlan, bool, Vec<(usize, SqlType)>)> {
        let saved = std::mem::take(&mut *scope.outer_refs.borrow_mut());
        let plan = self.plan_query(q, Some(scope));
        let refs = std::mem::replace(&mut *scope.outer_refs.borrow_mut(), saved);
        let plan = plan?;
        {
            let mut cur = scope.outer_refs.borrow_mut();
            for r in &refs {
                if !cur.iter().any(|(i, _)| *i == r.0) {
                    cur.push(*r);
                }
            }
        }
        // A reference deeper than one level also makes it correlated.
        let correlated = !refs.is_empty() || plan.references_outer(1);
        Ok((plan, correlated, refs))
    }
}

impl<'a> Planner<'a> {
    /// The columns `q.*` names, as qualified identifiers (innermost scope
    /// that has them; 42P01 when none).
    pub(super) fn star_columns(&self, q: &ast::ObjectName, scope: &Scope) -> Result<Vec<ast::Expr>> {
        let qual = match q.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) => ident(i),
            _ => bail!(Syntax, "improper qualified name"),
        };
        let mut s = Some(scope);
        while let Some(sc) = s {
            let cols: Vec<ast::Expr> = sc
                .columns
                .iter()
                .filter(|c| !super::is_hidden(c) && super::visible_qualifier(c) == Some(qual.as_str()))
                .map(|c| {
                    ast::Expr::CompoundIdentifier(vec![
                        ast::Ident::with_quote('"', qual.clone()),
                        ast::Ident::with_quote('"', c.name.clone()),
                    ])
                })
                .collect();
            if !cols.is_empty() {
                return Ok(cols);
            }
            s = sc.parent;
        }
        bail!(UndefinedTable, "missing FROM-clause entry for table \"{qual}\"")
    }

    /// `ROW(a, b)` / `(a, b)` as a value: the record's text form `(a,b)`.
    fn bind_row(&self, items: &[ast::Expr], scope: &Scope, agg: Option<&AggCollector>) -> Result<Expr> {
        let args = items.iter().map(|i| self.bind_expr(i, scope, agg)).collect::<Result<Vec<_>>>()?;
        Ok(Expr::Func { name: "record_out".into(), args, ty: SqlType::Text })
    }
}

/// make_interval's seven arguments in order: positional ones first, then
/// the named ones (`years => 2`, `secs := 1.5`) in their places, zero for
/// the rest (its declared defaults).
fn make_interval_args(f: &ast::Function, args: Vec<ast::Expr>) -> Result<Vec<ast::Expr>> {
    const PARAMS: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];
    let names = arg_names(f);
    if names.len() != args.len() || args.len() > PARAMS.len() {
        return Ok(args);
    }
    let mut slots: Vec<Option<ast::Expr>> = vec![None; PARAMS.len()];
    for (k, (name, arg)) in names.into_iter().zip(args).enumerate() {
        let at = match name {
            None => k,
            Some(n) => PARAMS
                .iter()
                .position(|p| *p == n)
                .ok_or_else(|| err!(UndefinedFunction, "function make_interval with an argument named \"{n}\" does not exist"))?,
        };
        if slots[at].is_some() {
            bail!(Syntax, "argument name \"{}\" used more than once", PARAMS[at]);
        }
        slots[at] = Some(arg);
    }
    Ok(slots
        .into_iter()
        .enumerate()
        .map(|(k, a)| {
            a.unwrap_or_else(|| {
                let zero = if k == 6 { "0.0" } else { "0" };
                ast::Expr::Value(ast::Value::Number(zero.into(), false).into())
            })
        })
        .collect())
}

/// The name of each argument of a call (`name => x`), None for positional
/// ones, in the order the binder collects the arguments.
pub(super) fn arg_names(f: &ast::Function) -> Vec<Option<String>> {
    match &f.args {
        ast::FunctionArguments::List(l) => l
            .args
            .iter()
            .filter(|a| !matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)))
            .map(|a| match a {
                ast::FunctionArg::Named { name, .. } => Some(ident(name)),
                ast::FunctionArg::ExprNamed { name: ast::Expr::Identifier(name), .. } => Some(ident(name)),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

/// The fields of a row constructor: `(a, b)` or `ROW(a, …)` with plain
/// arguments.
/// A call's arguments after spreading a `VARIADIC` array (the parser's marker call
/// `weir_variadic(arr)` as the last argument).
enum Spread {
    Args(Vec<ast::Expr>),
    /// The array is NULL (the arguments before it): `format` treats it as no arguments,
    /// concat gives NULL.
    Null(Vec<ast::Expr>),
}

/// Spread a constant VARIADIC array — `ARRAY[…]` (with a cast: each element cast), a
/// string literal cast to an array type, NULL — into separate arguments. PostgreSQL passes
/// the array whole to a variadic function; every built-in one weir has treats its elements as
/// separate arguments, so spreading is the same. A computed array is refused (0A000).
fn spread_variadic(mut args: Vec<ast::Expr>) -> Result<Spread> {
    let Some(ast::Expr::Function(f)) = args.last() else { return Ok(Spread::Args(args)) };
    if !f.name.to_string().eq_ignore_ascii_case(crate::parser::VARIADIC_MARKER) {
        return Ok(Spread::Args(args));
    }
    let inner = match &f.args {
        ast::FunctionArguments::List(l) if l.args.len() == 1 => match &l.args[0] {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => x.clone(),
            _ => bail!(Syntax, "syntax error at or near \"VARIADIC\""),
        },
        _ => bail!(Syntax, "syntax error at or near \"VARIADIC\""),
    };
    args.pop();
    let (value, elem_type) = match inner {
        ast::Expr::Cast { expr, data_type: ast::DataType::Array(def), .. } => {
            let elem = match def {
                ast::ArrayElemTypeDef::SquareBracket(t, _)
                | ast::ArrayElemTypeDef::AngleBracket(t)
                | ast::ArrayElemTypeDef::Parenthesis(t) => Some(*t),
                ast::ArrayElemTypeDef::Qualified(t, _) | ast::ArrayElemTypeDef::ParenthesisNotNull(t) => Some(*t),
                ast::ArrayElemTypeDef::None => None,
            };
            (*expr, elem)
        }
        other => (other, None),
    };
    let cast = |e: ast::Expr| match &elem_type {
        Some(t) => ast::Expr::Cast { kind: ast::CastKind::DoubleColon, expr: Box::new(e), data_type: t.clone(), format: None },
        None => e,
    };
    match value {
        ast::Expr::Array(a) => {
            args.extend(a.elem.into_iter().map(cast));
            Ok(Spread::Args(args))
        }
        ast::Expr::Value(v) if matches!(v.value, ast::Value::Null) => Ok(Spread::Null(args)),
        ast::Expr::Value(v) if elem_type.is_some() => {
            let ast::Value::SingleQuotedString(text) = &v.value else {
                bail!(FeatureNotSupported, "VARIADIC argument must be a constant array in weir")
            };
            for item in crate::types::array::parse_array(text)? {
                args.push(cast(match item {
                    Some(t) => ast::Expr::value(ast::Value::SingleQuotedString(t)),
                    None => ast::Expr::value(ast::Value::Null),
                }));
            }
            Ok(Spread::Args(args))
        }
        _ => bail!(FeatureNotSupported, "VARIADIC argument must be a constant array in weir"),
    }
}

fn row_items(e: &ast::Expr) -> Option<Vec<ast::Expr>> {
    match e {
        ast::Expr::Tuple(items) => Some(items.clone()),
        ast::Expr::Function(f) if f.over.is_none() && f.name.0.len() == 1 && f.name.to_string().eq_ignore_ascii_case("row") => {
            match &f.args {
                ast::FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => l
                    .args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x.clone()),
                        _ => None,
                    })
                    .collect(),
                ast::FunctionArguments::None => Some(vec![]),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A comparison of row constructors as PostgreSQL's row-wise comparison,
/// written out on the fields: `=` is every pair equal, `<>` any pair
/// unequal, `<` `<=` `>` `>=` decided by the first unequal pair, IS [NOT]
/// DISTINCT FROM pairwise, `IN (rows…)` as `=` to any of them. None when
/// `e` is not one.
fn row_comparison(e: &ast::Expr) -> Result<Option<ast::Expr>> {
    use ast::Expr as E;
    let pair = |a: &ast::Expr, b: &ast::Expr| -> Result<Option<(Vec<ast::Expr>, Vec<ast::Expr>)>> {
        match (row_items(a), row_items(b)) {
            (Some(l), Some(r)) => {
                if l.len() != r.len() {
                    bail!(Syntax, "unequal number of entries in row expressions");
                }
                if l.is_empty() {
                    bail!(FeatureNotSupported, "cannot compare rows of zero length");
                }
                Ok(Some((l, r)))
            }
            _ => Ok(None),
        }
    };
    let bin = |l: ast::Expr, op: BO, r: ast::Expr| E::BinaryOp { left: Box::new(l), op, right: Box::new(r) };
    let nested = |x: ast::Expr| E::Nested(Box::new(x));
    let fold = |v: Vec<ast::Expr>, op: BO| v.into_iter().reduce(|a, b| bin(a, op.clone(), b)).map(nested);
    Ok(match e {
        E::BinaryOp { left, op, right } if matches!(op, BO::Eq | BO::NotEq | BO::Lt | BO::LtEq | BO::Gt | BO::GtEq) => {
            let Some((l, r)) = pair(left, right)? else { return Ok(None) };
            match op {
                BO::Eq => fold(l.into_iter().zip(r).map(|(a, b)| bin(a, BO::Eq, b)).collect(), BO::And),
                BO::NotEq => fold(l.into_iter().zip(r).map(|(a, b)| bin(a, BO::NotEq, b)).collect(), BO::Or),
                _ => {
                    // a1 op' b1 OR (a1 = b1 AND (…)), the last pair with op itself.
                    let strict = match op {
                        BO::Lt | BO::LtEq => BO::Lt,
                        _ => BO::Gt,
                    };
                    let n = l.len();
                    let mut acc = bin(l[n - 1].clone(), op.clone(), r[n - 1].clone());
                    for k in (0..n - 1).rev() {
                        let first = bin(l[k].clone(), strict.clone(), r[k].clone());
                        let eq = bin(l[k].clone(), BO::Eq, r[k].clone());
                        acc = nested(bin(first, BO::Or, nested(bin(eq, BO::And, nested(acc)))));
                    }
                    Some(nested(acc))
                }
            }
        }
        E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
            let Some((l, r)) = pair(a, b)? else { return Ok(None) };
            let distinct = matches!(e, E::IsDistinctFrom(..));
            let parts: Vec<ast::Expr> =
                l.into_iter()
                    .zip(r)
                    .map(|(x, y)| {
                        if distinct {
                            E::IsDistinctFrom(Box::new(x), Box::new(y))
                        } else {
                            E::IsNotDistinctFrom(Box::new(x), Box::new(y))
                        }
                    })
                    .collect();
            fold(parts, if distinct { BO::Or } else { BO::And })
        }
        E::In { expr, target: ast::InTarget::List(list), negated, .. } if row_items(expr).is_some() && !list.is_empty() => {
            let mut any = Vec::new();
            for item in list {
                let eq = bin((**expr).clone(), BO::Eq, item.clone());
                match row_comparison(&eq)? {
                    Some(x) => any.push(x),
                    None => return Ok(None),
                }
            }
            let x = fold(any, BO::Or).expect("non-empty list");
            Some(if *negated { E::UnaryOp { op: ast::UnaryOperator::Not, expr: Box::new(x) } } else { x })
        }
        // `(a, b) IN (VALUES (1, 2), …)`: the rows are a list.
        E::In { expr, target: ast::InTarget::Subquery(q), negated, .. } if row_items(expr).is_some() => {
            let rows = match (q.body.as_ref(), &q.with, &q.order_by, &q.limit_clause) {
                (ast::SetExpr::Values(v), None, None, None) => &v.rows,
                _ => return Ok(None),
            };
            let list: Vec<ast::Expr> = rows.iter().map(|r| ast::Expr::Tuple(r.content.clone())).collect();
            let inner = E::In { expr: expr.clone(), target: ast::InTarget::List(list), negated: *negated, global: false };
            return row_comparison(&inner);
        }
        _ => None,
    })
}

/// Cast a one-column plan's output to a type.
fn cast_plan_column(plan: LogicalPlan, ty: SqlType) -> LogicalPlan {
    let cols = plan.columns().to_vec();
    if cols[0].ty == ty {
        return plan;
    }
    let expr = coerce(Expr::Column { index: 0, ty: cols[0].ty }, ty)
        .unwrap_or(Expr::Cast { expr: Box::new(Expr::Column { index: 0, ty: cols[0].ty }), ty });
    let mut c = cols[0].clone();
    c.ty = ty;
    LogicalPlan::Project { input: Box::new(plan), exprs: vec![expr], columns: vec![c] }
}

/// A call `name(args)` as sqlparser writes it, for operators that are functions in PostgreSQL.
fn call_ast(name: &str, args: Vec<ast::Expr>) -> ast::Expr {
    ast::Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))).collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

pub fn binop(op: &BO) -> Result<BinOp> {
    Ok(match op {
        BO::Plus => BinOp::Add,
        BO::Minus => BinOp::Sub,
        BO::Multiply => BinOp::Mul,
        BO::Divide => BinOp::Div,
        BO::Modulo => BinOp::Mod,
        BO::Eq => BinOp::Eq,
        BO::NotEq => BinOp::NotEq,
        BO::Lt => BinOp::Lt,
        BO::LtEq => BinOp::LtEq,
        BO::Gt => BinOp::Gt,
        BO::GtEq => BinOp::GtEq,
        BO::And => BinOp::And,
        BO::Or => BinOp::Or,
        BO::StringConcat => BinOp::Concat,
        other => bail!(FeatureNotSupported, "operator {other} is not supported"),
    })
}

/// The typmod of an INTERVAL type name with fields or a precision
/// (`INTERVAL DAY TO MINUTE`, `interval(2)`); None for a plain `interval`.
fn interval_cast_typmod(dt: &ast::DataType) -> Option<(crate::types::interval_input::IntervalRange, Option<u32>)> {
    use crate::types::interval_input::IntervalRange as M;
    use ast::IntervalFields as F;
    let ast::DataType::Interval { fields, precision } = dt else { return None };
    if fields.is_none() && precision.is_none() {
        return None;
    }
    let range = match fields {
        None => M::FULL,
        Some(f) => {
            let (first, last) = match f {
                F::Year => (M::YEAR, None),
                F::Month => (M::MONTH, None),
                F::Day => (M::DAY, None),
                F::Hour => (M::HOUR, None),
                F::Minute => (M::MINUTE, None),
                F::Second => (M::SECOND, None),
                F::YearToMonth => (M::YEAR, Some(M::MONTH)),
                F::DayToHour => (M::DAY, Some(M::HOUR)),
                F::DayToMinute => (M::DAY, Some(M::MINUTE)),
                F::DayToSecond => (M::DAY, Some(M::SECOND)),
                F::HourToMinute => (M::HOUR, Some(M::MINUTE)),
                F::HourToSecond => (M::HOUR, Some(M::SECOND)),
                F::MinuteToSecond => (M::MINUTE, Some(M::SECOND)),
            };
            M::between(first, last)
        }
    };
    Some((range, precision.map(|p| p.min(6) as u32)))
}

/// The typmod of `INTERVAL '…' <fields> [(p)]`: the range of fields and
/// the fractional-second precision; None for a field outside PostgreSQL's
/// interval grammar.
fn interval_typmod(iv: &ast::Interval) -> Option<(crate::types::interval_input::IntervalRange, Option<u32>)> {
    use crate::types::interval_input::IntervalRange as M;
    use ast::DateTimeField as F;
    let mask = |f: &F| match f {
        F::Year | F::Years => Some(M::YEAR),
        F::Month | F::Months => Some(M::MONTH),
        F::Day | F::Days => Some(M::DAY),
        F::Hour | F::Hours => Some(M::HOUR),
        F::Minute | F::Minutes => Some(M::MINUTE),
        F::Second | F::Seconds => Some(M::SECOND),
        _ => None,
    };
    let Some(first) = &iv.leading_field else { return Some((M::FULL, None)) };
    let first = mask(first)?;
    let last = match &iv.last_field {
        Some(f) => Some(mask(f)?),
        None => None,
    };
    let precision = match (first, last) {
        (M::SECOND, None) => iv.leading_precision.or(iv.fractional_seconds_precision),
        _ => iv.fractional_seconds_precision,
    };
    Some((M::between(first, last), precision.map(|p| p.min(6) as u32)))
}
