//! A view's definition as PostgreSQL 15's ruleutils prints it (`pg_get_viewdef`,
//! `information_schema.views.view_definition`): `*` expanded, every column
//! qualified by the name of the FROM item it comes from, literals and implicit
//! casts shown as `'x'::text` / `t.a::double precision`, one select-list item
//! per line, and PostgreSQL's indentation (`appendContextKeyword`'s rules).
//!
//! The text is computed once, when the view is created, from its AST and the
//! FROM items' columns as the planner binds them (names and types), and kept in
//! the catalog: like PostgreSQL's stored rule, it does not change when a table
//! gains columns later; a column change under it prints it again (`Altered`).
//! Pretty (`pg_get_viewdef(v, true)`: fewer parentheses)
//! and plain forms are both kept. WITH queries are put in the planner's scope
//! while their query prints (get_with_clause, SEARCH / CYCLE included), and a
//! temporary table prints under the name the session wrote. A query shape this
//! module does not know (LATERAL, some FROM items, ...) is an error here and
//! the caller keeps the query's own SQL text instead.
//!
//! Imports only the planner's binding helpers and sqlparser's AST.

use std::cell::RefCell;
use std::collections::HashMap;

use sqlparser::ast::{self, BinaryOperator, Expr as E, SelectItem, SetExpr, TableFactor, UnaryOperator, Value};

use super::system::quote_ident;
use super::{ident, object_name, Planner};
use crate::bail;
use crate::error::Result;
use crate::types::SqlType;

/// ruleutils' indentation steps.
const INDENT_STD: i32 = 8;
const INDENT_JOIN: i32 = 4;
const INDENT_VAR: i32 = 4;

/// The two texts of a view: `pg_get_viewdef(v, true)` and `pg_get_viewdef(v)`.
pub struct ViewText {
    pub pretty: String,
    pub plain: String,
}

/// A relation whose columns changed (ALTER TABLE, ALTER VIEW … RENAME COLUMN)
/// under a view whose SQL still names them as they were: PostgreSQL's stored
/// rule refers to columns by number, so the view keeps reading the same
/// columns; printing it again names them as they are now (`t.x AS a`), or
/// gives the relation column aliases where the query needs the old names
/// (a USING column: `t t(a, b)`). New columns are not the view's; a dropped
/// one must not be used by it.
pub struct Altered {
    pub database: String,
    pub name: String,
    /// The relation's columns as the view's SQL names them, in order.
    pub old: Vec<String>,
    /// Each column it has now: its index in `old`, or None for one added since.
    pub now: Vec<Option<usize>>,
}

/// Query-name prefixes of relation columns the view's SQL cannot name: one
/// added since the view was made, one dropped since (kept for positions:
/// a join alias list maps the view's columns by position).
const NEW_COL: char = '\u{1}';
const DROPPED_COL: char = '\u{2}';

fn is_dropped(name: &str) -> bool {
    name.starts_with(DROPPED_COL)
}

/// Whether a column is one the view's SQL knows (not added or dropped since).
fn is_known(name: &str) -> bool {
    !name.starts_with([NEW_COL, DROPPED_COL])
}

impl Planner<'_> {
    /// The view's definition in both forms; `columns` are the view's column
    /// names (they decide the `AS` labels of every SELECT of the query).
    pub fn view_text(&self, q: &ast::Query, columns: &[String]) -> Result<ViewText> {
        self.view_text_altered(q, columns, None)
    }

    /// `view_text` of a view whose SQL was written before `altered` changed.
    pub fn view_text_altered(&self, q: &ast::Query, columns: &[String], altered: Option<&Altered>) -> Result<ViewText> {
        let text = |pretty: bool| -> Result<String> {
            let d = Deparser {
                planner: self,
                altered,
                pretty,
                refnames: Default::default(),
                taken: Default::default(),
                colnames: Default::default(),
                using_names: Default::default(),
            };
            let mut out = Out { buf: String::new(), indent: 0 };
            d.query(q, &[], Labels::View(columns), &mut out)?;
            Ok(format!("{};", out.buf))
        };
        Ok(ViewText { pretty: text(true)?, plain: text(false)? })
    }
}

/// pg_get_viewdef's text of a view: the deparsed definition kept at
/// creation, else the view's SQL in the same frame (` SELECT …;`).
pub fn view_definition(v: &crate::catalog::ViewDef, pretty: bool) -> String {
    match &v.definition {
        Some((p, _)) if pretty => p.clone(),
        Some((_, plain)) => plain.clone(),
        None => format!(" {};", v.sql.trim().trim_end_matches(';')),
    }
}

/// Where a query's select-list labels (`AS name`) come from.
#[derive(Clone, Copy)]
enum Labels<'a> {
    /// The view's column names.
    View(&'a [String]),
    /// A derived table's: each item's own name (`?column?` when it has none).
    Derived,
    /// A sub-select in an expression: unnamed items get no label.
    Sublink,
}

/// A column as names in a query see it.
#[derive(Clone, Debug)]
struct Col {
    /// The name `col` and `q.col` match.
    name: String,
    /// The name it prints under: `name`, or the alias ruleutils gave it to
    /// keep names unique (`x_1`, see `Deparser::assign_column_names`).
    shown: String,
    ty: Ty,
    /// How a reference to it prints (`t.a`, or `a` for a FULL JOIN's merged column).
    text: String,
}

/// A FROM item: the columns it makes visible, and for an unaliased join the
/// items inside it, which qualified names still reach.
#[derive(Clone, Debug, Default)]
struct Item {
    /// The name qualified references use (alias or relation name).
    written: Option<String>,
    /// The name it prints as: `written` made unique (see `Deparser::refname`).
    refname: Option<String>,
    cols: Vec<Col>,
    inner: Vec<Item>,
}

impl Item {
    /// The item a qualifier names, looking inside unaliased joins.
    fn find(&self, q: &str) -> Option<&Item> {
        if self.written.as_deref() == Some(q) {
            return Some(self);
        }
        self.inner.iter().find_map(|i| i.find(q))
    }
}

/// One query level's FROM items; subqueries see their outer levels.
#[derive(Default, Clone, Debug)]
struct Level {
    items: Vec<Item>,
}

/// A type as far as the deparser needs it: a bound SQL type, PostgreSQL's
/// numeric (a literal like `1.5`), an untyped literal, or not known.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Sql(SqlType),
    Numeric,
    Unknown,
    Any,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Sql(t) => t.pg_name(),
            Ty::Numeric => "numeric",
            Ty::Unknown | Ty::Any => "text",
        }
    }

    fn numeric_rank(self) -> Option<u8> {
        Some(match self {
            Ty::Sql(SqlType::Int2) => 1,
            Ty::Sql(SqlType::Int4) => 2,
            Ty::Sql(SqlType::Int8) => 3,
            Ty::Numeric => 4,
            Ty::Sql(SqlType::Float4) => 5,
            Ty::Sql(SqlType::Float8) => 6,
            _ => return None,
        })
    }

    fn is_int(self) -> bool {
        matches!(self, Ty::Sql(SqlType::Int2 | SqlType::Int4 | SqlType::Int8))
    }

    fn is_float(self) -> bool {
        matches!(self, Ty::Sql(SqlType::Float4 | SqlType::Float8))
    }
}

/// The type both sides of a USING column or an operator meet at
/// (PostgreSQL's select_common_type for the categories weir has).
fn common(a: Ty, b: Ty) -> Ty {
    if a == b {
        return a;
    }
    match (a, b) {
        (Ty::Unknown, t) | (t, Ty::Unknown) => t,
        (Ty::Any, _) | (_, Ty::Any) => Ty::Any,
        _ => match (a.numeric_rank(), b.numeric_rank()) {
            (Some(x), Some(y)) => {
                if x >= y {
                    a
                } else {
                    b
                }
            }
            _ => match (a, b) {
                (Ty::Sql(SqlType::Text | SqlType::Varchar), Ty::Sql(SqlType::Text | SqlType::Varchar)) => Ty::Sql(SqlType::Text),
                (Ty::Sql(SqlType::Date), Ty::Sql(t @ (SqlType::Timestamp | SqlType::TimestampTz)))
                | (Ty::Sql(t @ (SqlType::Timestamp | SqlType::TimestampTz)), Ty::Sql(SqlType::Date)) => Ty::Sql(t),
                (Ty::Sql(SqlType::Timestamp), Ty::Sql(SqlType::TimestampTz))
                | (Ty::Sql(SqlType::TimestampTz), Ty::Sql(SqlType::Timestamp)) => Ty::Sql(SqlType::TimestampTz),
                _ => Ty::Any,
            },
        },
    }
}

/// The output buffer of one query level and its indentation (ruleutils'
/// `deparse_context`: buf and indentLevel).
struct Out {
    buf: String,
    indent: i32,
}

impl Out {
    /// appendContextKeyword: in pretty-indent mode (always, for views) a new
    /// line indented by the level plus `plus`, then the keyword.
    fn keyword(&mut self, s: &str, before: i32, after: i32, plus: i32) {
        self.indent += before;
        self.trim();
        self.buf.push('\n');
        let n = self.indent.max(0) + plus;
        self.buf.extend(std::iter::repeat_n(' ', n.max(0) as usize));
        self.buf.push_str(s);
        self.indent = (self.indent + after).max(0);
    }

    /// removeStringInfoSpaces.
    fn trim(&mut self) {
        let n = self.buf.trim_end_matches(' ').len();
        self.buf.truncate(n);
    }

    fn push(&mut self, s: &str) {
        self.buf.push_str(s);
    }

    /// Run `f` into a fresh buffer at the same indentation; returns its text.
    fn capture(&mut self, f: impl FnOnce(&mut Out) -> Result<()>) -> Result<String> {
        let saved = std::mem::take(&mut self.buf);
        let r = f(self);
        let text = std::mem::replace(&mut self.buf, saved);
        r.map(|_| text)
    }
}

/// What an expression is, for ruleutils' parenthesization (isSimpleNode).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Columns, constants, function calls, casts, CASE: never parenthesized.
    Simple,
    /// A binary operator.
    Op(&'static str),
    And,
    Or,
    Not,
    /// IS NULL, IS TRUE, sub-selects, IS DISTINCT FROM.
    Test,
}

/// Where an expression sits, for the same decision.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Parent {
    Op(&'static str, bool),
    And,
    Or,
    Not,
    /// A function's argument, CASE, aggregates: own separators.
    Func,
    /// The argument of a cast.
    Cast,
    /// The argument of IS NULL, IS DISTINCT FROM, `= ANY`.
    Other,
    /// Where ruleutils prints without considering parentheses (a select
    /// item, WHERE, ON, a sort key, a function argument).
    Top,
}

fn is_simple(kind: Kind, parent: Parent) -> bool {
    let arith = |op: &str| -> Option<bool> {
        match op {
            "+" | "-" => Some(false),
            "*" | "/" | "%" => Some(true),
            _ => None,
        }
    };
    match kind {
        Kind::Simple => true,
        Kind::Op(op) if matches!(parent, Parent::Op(..)) => {
            let Parent::Op(pop, is_left) = parent else { return false };
            match (arith(op), arith(pop)) {
                (Some(hi), Some(phi)) => {
                    if hi && !phi {
                        true
                    } else if !hi && phi {
                        false
                    } else {
                        is_left
                    }
                }
                _ => false,
            }
        }
        Kind::Op(_) | Kind::Test => matches!(parent, Parent::And | Parent::Or | Parent::Not | Parent::Func),
        Kind::Not | Kind::And => matches!(parent, Parent::And | Parent::Or | Parent::Func),
        Kind::Or => matches!(parent, Parent::Or | Parent::Func),
    }
}

/// PostgreSQL's quote_identifier: also quotes keywords that are not unreserved.
fn quote(n: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "authorization",
        "between",
        "bigint",
        "binary",
        "bit",
        "boolean",
        "both",
        "case",
        "cast",
        "char",
        "character",
        "check",
        "coalesce",
        "collate",
        "collation",
        "column",
        "concurrently",
        "constraint",
        "create",
        "cross",
        "current_catalog",
        "current_date",
        "current_role",
        "current_schema",
        "current_time",
        "current_timestamp",
        "current_user",
        "dec",
        "decimal",
        "default",
        "deferrable",
        "desc",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "exists",
        "extract",
        "false",
        "fetch",
        "float",
        "for",
        "foreign",
        "freeze",
        "from",
        "full",
        "grant",
        "greatest",
        "group",
        "grouping",
        "having",
        "ilike",
        "in",
        "initially",
        "inner",
        "inout",
        "int",
        "integer",
        "intersect",
        "interval",
        "into",
        "is",
        "isnull",
        "join",
        "lateral",
        "leading",
        "least",
        "left",
        "like",
        "limit",
        "localtime",
        "localtimestamp",
        "national",
        "natural",
        "nchar",
        "none",
        "normalize",
        "not",
        "notnull",
        "null",
        "nullif",
        "numeric",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "out",
        "outer",
        "overlaps",
        "overlay",
        "placing",
        "position",
        "precision",
        "primary",
        "real",
        "references",
        "returning",
        "right",
        "row",
        "select",
        "session_user",
        "setof",
        "similar",
        "smallint",
        "some",
        "substring",
        "symmetric",
        "table",
        "tablesample",
        "then",
        "time",
        "timestamp",
        "to",
        "trailing",
        "treat",
        "trim",
        "true",
        "union",
        "unique",
        "user",
        "using",
        "values",
        "varchar",
        "variadic",
        "verbose",
        "when",
        "where",
        "window",
        "with",
    ];
    if KEYWORDS.contains(&n) {
        format!("\"{n}\"")
    } else {
        quote_ident(n)
    }
}

/// simple_quote_literal (standard_conforming_strings on).
fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn unnest(mut e: &E) -> &E {
    while let E::Nested(inner) = e {
        e = inner;
    }
    e
}

/// The operator name PostgreSQL prints for sqlparser's binary operator.
fn op_name(op: &BinaryOperator) -> Option<&'static str> {
    use BinaryOperator as B;
    Some(match op {
        B::Plus => "+",
        B::Minus => "-",
        B::Multiply => "*",
        B::Divide => "/",
        B::Modulo => "%",
        B::Eq => "=",
        B::NotEq => "<>",
        B::Lt => "<",
        B::LtEq => "<=",
        B::Gt => ">",
        B::GtEq => ">=",
        B::StringConcat => "||",
        B::BitwiseAnd => "&",
        B::BitwiseOr => "|",
        B::PGBitwiseXor => "#",
        B::PGBitwiseShiftLeft => "<<",
        B::PGBitwiseShiftRight => ">>",
        B::PGExp => "^",
        B::PGRegexMatch => "~",
        B::PGRegexIMatch => "~*",
        B::PGRegexNotMatch => "!~",
        B::PGRegexNotIMatch => "!~*",
        _ => return None,
    })
}

fn is_comparison(op: &str) -> bool {
    matches!(op, "=" | "<>" | "<" | "<=" | ">" | ">=" | "~~" | "!~~" | "~~*" | "!~~*" | "~" | "~*" | "!~" | "!~*")
}

/// A number literal's type: int4, then int8, then numeric, as PostgreSQL's lexer.
fn number_type(n: &str) -> Ty {
    if n.parse::<i32>().is_ok() {
        Ty::Sql(SqlType::Int4)
    } else if n.parse::<i64>().is_ok() {
        Ty::Sql(SqlType::Int8)
    } else {
        Ty::Numeric
    }
}

/// The casts an operator's arguments get: PostgreSQL has cross-type
/// operators within the integers and within the floats; other mixes meet at
/// the common type, and an untyped literal takes the other side's type.
fn operand_casts(op: &str, l: Ty, r: Ty) -> (Option<Ty>, Option<Ty>) {
    // varchar has no operators of its own: it is cast to text.
    let text = Ty::Sql(SqlType::Text);
    let varchar = Ty::Sql(SqlType::Varchar);
    if (l == varchar || r == varchar) && op != "||" {
        let side = |t: Ty| if t == varchar || t == Ty::Unknown { Some(text) } else { None };
        if [l, r].iter().all(|t| [varchar, text, Ty::Unknown].contains(t)) {
            return (side(l), side(r));
        }
    }
    let lit = |t: Ty| t == Ty::Unknown;
    if lit(l) && lit(r) {
        return (Some(Ty::Sql(SqlType::Text)), Some(Ty::Sql(SqlType::Text)));
    }
    if lit(l) {
        return (Some(if r == Ty::Any { Ty::Sql(SqlType::Text) } else { r }), None);
    }
    if lit(r) {
        return (None, Some(if l == Ty::Any { Ty::Sql(SqlType::Text) } else { l }));
    }
    if l == r || l == Ty::Any || r == Ty::Any {
        return (None, None);
    }
    if (l.is_int() && r.is_int()) || (l.is_float() && r.is_float()) {
        return (None, None);
    }
    if op == "||" {
        return (None, None);
    }
    let c = common(l, r);
    if c == Ty::Any {
        return (None, None);
    }
    (if l == c { None } else { Some(c) }, if r == c { None } else { Some(c) })
}

struct Deparser<'p, 'c> {
    planner: &'p Planner<'c>,
    altered: Option<&'p Altered>,
    pretty: bool,
    /// The reference name each relation of the query got (by the AST node's
    /// address): its alias or name, made unique against the enclosing
    /// queries' and earlier ones' as set_rtable_names does (`u_1`).
    refnames: RefCell<HashMap<usize, String>>,
    /// The names taken at the query level whose FROM items are being named.
    taken: RefCell<Vec<String>>,
    /// The column names each relation of the query prints its columns under
    /// (by the AST node's address), when one differs from the column's own.
    colnames: RefCell<HashMap<usize, Vec<String>>>,
    /// The names a join's USING columns print under (by the `ast::Join`'s address).
    using_names: RefCell<HashMap<usize, Vec<String>>>,
}

impl Deparser<'_, '_> {
    /// get_query_def: one query level at `out`'s indentation. `names` are the
    /// output column names its SELECTs label with (the view's columns at the top).
    fn query(&self, q: &ast::Query, outer: &[Level], names: Labels, out: &mut Out) -> Result<()> {
        if q.fetch.is_some() || !q.locks.is_empty() {
            bail!(FeatureNotSupported, "view definition text: FETCH and locking clauses are not deparsed");
        }
        if let Some(w) = &q.with {
            // The WITH queries are in scope of the body and of each other as
            // the planner binds them (FROM items read their columns there).
            let depth = self.planner.ctes.borrow().len();
            let body = ast::Query { with: None, ..q.clone() };
            let r = self
                .planner
                .push_ctes(w, 0)
                .and_then(|()| self.with_clause(w, outer, out))
                .and_then(|()| self.query(&body, outer, names, out));
            self.planner.ctes.borrow_mut().truncate(depth);
            return r;
        }
        let mut o = Out { buf: String::new(), indent: out.indent };
        let (level, targets) = self.set_expr(&q.body, outer, names, &mut o)?;
        let is_setop = !matches!(&*q.body, SetExpr::Select(_));
        if let Some(ob) = &q.order_by {
            let ast::OrderByKind::Expressions(items) = &ob.kind else {
                bail!(FeatureNotSupported, "view definition text: ORDER BY ALL");
            };
            o.keyword(" ORDER BY ", -INDENT_STD, INDENT_STD, 1);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    o.push(", ");
                }
                let pos = self.output_position(&item.expr, &targets);
                match pos {
                    Some(p) if is_setop => o.push(&(p + 1).to_string()),
                    Some(p) => self.sort_text(&targets[p].1, targets[p].2, &mut o),
                    None if is_setop => bail!(FeatureNotSupported, "view definition text: ORDER BY expression over a set operation"),
                    None => {
                        let scope = self.chain(outer, &level);
                        self.sort_expr(&item.expr, &scope, &mut o)?;
                    }
                }
                sort_direction(&item.options, &mut o);
            }
        }
        if let Some(lc) = &q.limit_clause {
            let (limit, offset) = match lc {
                ast::LimitClause::LimitOffset { limit, offset, limit_by } if limit_by.is_empty() => {
                    (limit.as_ref(), offset.as_ref().map(|o| &o.value))
                }
                ast::LimitClause::OffsetCommaLimit { offset, limit } => (Some(limit), Some(offset)),
                _ => bail!(FeatureNotSupported, "view definition text: LIMIT BY"),
            };
            let scope = self.chain(outer, &Level::default());
            if let Some(off) = offset {
                o.keyword(" OFFSET ", -INDENT_STD, INDENT_STD, 0);
                self.expr(off, &scope, None, Parent::Top, &mut o)?;
            }
            if let Some(l) = limit {
                o.keyword(" LIMIT ", -INDENT_STD, INDENT_STD, 0);
                match unnest(l) {
                    E::Value(v) if matches!(v.value, Value::Null) => o.push("ALL"),
                    _ => self.expr(l, &scope, None, Parent::Top, &mut o)?,
                }
            }
        }
        out.push(&o.buf);
        Ok(())
    }

    /// get_with_clause.
    fn with_clause(&self, w: &ast::With, outer: &[Level], o: &mut Out) -> Result<()> {
        o.indent += INDENT_STD;
        o.push(" ");
        let mut sep = if w.recursive { "WITH RECURSIVE " } else { "WITH " };
        for cte in &w.cte_tables {
            o.push(sep);
            o.push(&quote(&ident(&cte.alias.name)));
            if !cte.alias.columns.is_empty() {
                let names: Vec<String> = cte.alias.columns.iter().map(|c| quote(&ident(&c.name))).collect();
                o.push(&format!("({})", names.join(", ")));
            }
            o.push(" AS ");
            match cte.materialized {
                Some(ast::CteAsMaterialized::Materialized) => o.push("MATERIALIZED "),
                Some(ast::CteAsMaterialized::NotMaterialized) => o.push("NOT MATERIALIZED "),
                None => {}
            }
            o.push("(");
            o.keyword("", 0, 0, 0);
            let mut inner = Out { buf: String::new(), indent: o.indent };
            self.query(&cte.query, outer, Labels::Derived, &mut inner)?;
            o.push(&inner.buf);
            o.keyword("", 0, 0, 0);
            o.push(")");
            let sc = crate::parser::cte_clauses(cte)?.unwrap_or_default();
            if let Some(s) = &sc.search {
                let by: Vec<String> = s.by.iter().map(|c| quote(c)).collect();
                o.push(&format!(
                    " SEARCH {} FIRST BY {} SET {}",
                    if s.breadth_first { "BREADTH" } else { "DEPTH" },
                    by.join(", "),
                    quote(&s.set)
                ));
            }
            if let Some(c) = &sc.cycle {
                let cols: Vec<String> = c.columns.iter().map(|c| quote(c)).collect();
                o.push(&format!(" CYCLE {} SET {}", cols.join(", "), quote(&c.mark)));
                let is_bool = |e: &E, b: bool| matches!(unnest(e), E::Value(v) if v.value == Value::Boolean(b));
                if !(is_bool(&c.value, true) && is_bool(&c.default, false)) {
                    let scope = self.chain(outer, &Level::default());
                    // An untyped literal mark is text, as the planner makes it.
                    let text =
                        |x: &E| (self.ty(x, &scope) == Ty::Unknown && self.literal(x) != Some(Lit::Null)).then_some(Ty::Sql(SqlType::Text));
                    o.push(" TO ");
                    self.expr(&c.value, &scope, text(&c.value), Parent::Top, o)?;
                    o.push(" DEFAULT ");
                    self.expr(&c.default, &scope, text(&c.default), Parent::Top, o)?;
                }
                o.push(&format!(" USING {}", quote(&c.path)));
            }
            sep = ", ";
        }
        o.indent -= INDENT_STD;
        o.keyword("", 0, 0, 0);
        Ok(())
    }

    /// The output column an ORDER BY item names: a position (`ORDER BY 2`) or
    /// an output column's name.
    fn output_position(&self, e: &E, targets: &[(String, String, SortClass)]) -> Option<usize> {
        match unnest(e) {
            E::Value(v) => match &v.value {
                Value::Number(n, _) => n.parse::<usize>().ok().filter(|&p| p >= 1 && p <= targets.len()).map(|p| p - 1),
                _ => None,
            },
            E::Identifier(i) => {
                let n = ident(i);
                targets.iter().position(|t| t.0 == n)
            }
            _ => None,
        }
    }

    fn chain(&self, outer: &[Level], level: &Level) -> Vec<Level> {
        let mut v = outer.to_vec();
        v.push(level.clone());
        v
    }

    /// A query body; returns the FROM level of a plain SELECT and its output
    /// columns (name, printed expression) for ORDER BY.
    fn set_expr(&self, body: &SetExpr, outer: &[Level], names: Labels, o: &mut Out) -> Result<(Level, Targets)> {
        match body {
            SetExpr::Select(s) => self.select(s, outer, names, o),
            SetExpr::Query(q) => {
                self.query(q, outer, names, o)?;
                Ok((Level::default(), Vec::new()))
            }
            SetExpr::Values(v) => {
                o.indent += INDENT_STD;
                o.push(" ");
                self.values(v, outer, o)?;
                Ok((Level::default(), Vec::new()))
            }
            SetExpr::SetOperation { .. } => {
                // ORDER BY names the output columns of the leftmost SELECT.
                let targets = self.setop(body, outer, names, o)?;
                Ok((Level::default(), targets))
            }
            _ => bail!(FeatureNotSupported, "view definition text: this query body is not deparsed"),
        }
    }

    /// get_setop_query.
    fn setop(&self, body: &SetExpr, outer: &[Level], names: Labels, o: &mut Out) -> Result<Targets> {
        match body {
            SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                let same = |e: &SetExpr| match e {
                    SetExpr::SetOperation { op: lop, set_quantifier: lq, .. } => lop == op && matches!(lq, ast::SetQuantifier::All) == all,
                    _ => true,
                };
                let left_paren = matches!(**left, SetExpr::SetOperation { .. }) && !same(left);
                let sub = if left_paren {
                    o.push("(");
                    o.keyword("", INDENT_STD, 0, 0);
                    INDENT_STD
                } else {
                    0
                };
                let targets = self.setop(left, outer, names, o)?;
                if left_paren {
                    o.keyword(") ", -sub, 0, 0);
                } else {
                    o.keyword("", -sub, 0, 0);
                }
                o.push(match op {
                    ast::SetOperator::Union => "UNION ",
                    ast::SetOperator::Intersect => "INTERSECT ",
                    ast::SetOperator::Except => "EXCEPT ",
                    _ => bail!(FeatureNotSupported, "view definition text: set operator {op}"),
                });
                if all {
                    o.push("ALL ");
                }
                let right_paren = matches!(**right, SetExpr::SetOperation { .. });
                let sub = if right_paren {
                    o.push("(");
                    INDENT_STD
                } else {
                    0
                };
                o.keyword("", sub, 0, 0);
                self.setop(right, outer, names, o)?;
                o.indent -= sub;
                if right_paren {
                    o.keyword(")", 0, 0, 0);
                }
                Ok(targets)
            }
            SetExpr::Query(q) => {
                let paren = q.order_by.is_some() || q.limit_clause.is_some() || q.with.is_some();
                if paren {
                    o.push("(");
                }
                self.query(q, outer, names, o)?;
                if paren {
                    o.push(")");
                }
                Ok(Vec::new())
            }
            other => {
                let mut inner = Out { buf: String::new(), indent: o.indent };
                let (_, targets) = self.set_expr(other, outer, names, &mut inner)?;
                o.push(&inner.buf);
                Ok(targets)
            }
        }
    }

    /// get_values_def.
    fn values(&self, v: &ast::Values, outer: &[Level], o: &mut Out) -> Result<()> {
        o.push("VALUES ");
        let scope = self.chain(outer, &Level::default());
        for (i, row) in v.rows.iter().enumerate() {
            if i > 0 {
                o.push(", ");
            }
            o.push("(");
            for (j, e) in row.iter().enumerate() {
                if j > 0 {
                    o.push(",");
                }
                self.expr(e, &scope, None, Parent::Top, o)?;
            }
            o.push(")");
        }
        Ok(())
    }

    /// get_basic_select_query.
    fn select(&self, s: &ast::Select, outer: &[Level], names: Labels, o: &mut Out) -> Result<(Level, Targets)> {
        if !s.named_window.is_empty() || s.qualify.is_some() || s.top.is_some() || s.into.is_some() || !s.lateral_views.is_empty() {
            bail!(FeatureNotSupported, "view definition text: this SELECT is not deparsed");
        }
        let mut level = Level::default();
        let saved = self.taken.take();
        self.assign_column_names(&s.from, outer)?;
        for twj in &s.from {
            level.items.push(self.join_item(twj, outer)?);
        }
        self.taken.replace(saved);
        let scope = self.chain(outer, &level);
        o.indent += INDENT_STD;
        o.push(" SELECT");
        match &s.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => o.push(" DISTINCT"),
            Some(ast::Distinct::On(exprs)) => {
                o.push(" DISTINCT ON (");
                for (i, e) in exprs.iter().enumerate() {
                    if i > 0 {
                        o.push(", ");
                    }
                    self.sort_expr(e, &scope, o)?;
                }
                o.push(")");
            }
        }
        // The select list, `*` expanded.
        let mut entries: Vec<(Option<&E>, Option<Col>, Option<String>)> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => entries.push((Some(e), None, None)),
                SelectItem::ExprWithAlias { expr, alias } => entries.push((Some(expr), None, Some(ident(alias)))),
                SelectItem::ExprWithAliases { .. } => bail!(FeatureNotSupported, "view definition text: several aliases"),
                SelectItem::Wildcard(opts) => {
                    if opts.opt_exclude.is_some() || opts.opt_except.is_some() || opts.opt_replace.is_some() || opts.opt_rename.is_some() {
                        bail!(FeatureNotSupported, "view definition text: wildcard options");
                    }
                    for it in &level.items {
                        for c in it.cols.iter().filter(|c| is_known(&c.name)) {
                            entries.push((None, Some(c.clone()), None));
                        }
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let ast::SelectItemQualifiedWildcardKind::ObjectName(name) = kind else {
                        bail!(FeatureNotSupported, "view definition text: expression.*");
                    };
                    let (_, q) = object_name(name)?;
                    let it = level.items.iter().find_map(|i| i.find(&q));
                    let Some(it) = it else { bail!(UndefinedTable, "missing FROM-clause entry for table \"{q}\"") };
                    for c in it.cols.iter().filter(|c| is_known(&c.name)) {
                        entries.push((None, Some(c.clone()), None));
                    }
                }
            }
        }
        let mut targets = Vec::new();
        for (n, (e, col, alias)) in entries.iter().enumerate() {
            o.push(if n == 0 { " " } else { ", " });
            let (attname, default_name) = match (e, col) {
                (_, Some(c)) => (Some(c.shown.clone()), c.name.clone()),
                (Some(e), None) => (self.attname(e, &scope), figure_colname(e)),
                (None, None) => unreachable!("a select-list entry is an expression or a column"),
            };
            let view_name = match names {
                Labels::View(ns) => ns.get(n).cloned(),
                _ => None,
            };
            let colname = view_name.or_else(|| alias.clone()).unwrap_or(default_name);
            let unlabeled = matches!(names, Labels::Sublink) && alias.is_none() && colname == "?column?";
            let field = o.capture(|o| {
                match (e, col) {
                    (_, Some(c)) => o.push(&c.text),
                    (Some(e), None) => self.expr(e, &scope, None, Parent::Top, o)?,
                    (None, None) => {}
                }
                Ok(())
            })?;
            let expr_text = field.clone();
            let class = match e {
                Some(e) => sort_class(e),
                None => SortClass::Column,
            };
            let mut field = field;
            if attname.as_deref() != Some(colname.as_str()) && !unlabeled {
                field.push_str(" AS ");
                field.push_str(&quote(&colname));
            }
            if field.starts_with('\n') {
                o.trim();
            } else if n > 0 {
                // wrapColumn is 0 for views: every item after the first on its own line.
                o.keyword("", -INDENT_STD, INDENT_STD, INDENT_VAR);
            }

            o.push(&field);
            targets.push((colname, expr_text, class));
        }
        // FROM
        for (i, twj) in s.from.iter().enumerate() {
            if i == 0 {
                o.keyword(" FROM ", -INDENT_STD, INDENT_STD, 2);
                self.from_join(twj, twj.joins.len(), outer, o)?;
            } else {
                o.push(", ");
                let item = o.capture(|o| self.from_join(twj, twj.joins.len(), outer, o))?;
                if item.starts_with('\n') {
                    o.trim();
                } else {
                    o.keyword("", -INDENT_STD, INDENT_STD, INDENT_VAR);
                }
                o.push(&item);
            }
        }
        if let Some(w) = &s.selection {
            o.keyword(" WHERE ", -INDENT_STD, INDENT_STD, 1);
            self.expr(w, &scope, None, Parent::Top, o)?;
        }
        match &s.group_by {
            ast::GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
                if !exprs.is_empty() {
                    o.keyword(" GROUP BY ", -INDENT_STD, INDENT_STD, 1);
                    for (i, e) in exprs.iter().enumerate() {
                        if i > 0 {
                            o.push(", ");
                        }
                        match self.output_position(e, &targets).filter(|_| matches!(unnest(e), E::Value(_))) {
                            Some(p) => self.sort_text(&targets[p].1, targets[p].2, o),
                            None => self.sort_expr(e, &scope, o)?,
                        }
                    }
                }
            }
            _ => bail!(FeatureNotSupported, "view definition text: GROUP BY modifiers"),
        }
        if let Some(h) = &s.having {
            o.keyword(" HAVING ", -INDENT_STD, INDENT_STD, 0);
            self.expr(h, &scope, None, Parent::Top, o)?;
        }
        Ok((level, targets))
    }

    /// The column name a select-list expression has by itself (a column
    /// reference's name), which decides whether `AS` is printed.
    fn attname(&self, e: &E, scope: &[Level]) -> Option<String> {
        match unnest(e) {
            E::Identifier(_) | E::CompoundIdentifier(_) => self.resolve(e, scope).ok().map(|c| c.shown),
            _ => None,
        }
    }

    /// The scope item of a FROM list entry (a relation and its joins).
    fn join_item(&self, twj: &ast::TableWithJoins, outer: &[Level]) -> Result<Item> {
        let mut left = self.factor_item(&twj.relation, outer)?;
        for j in &twj.joins {
            let right = self.factor_item(&j.relation, outer)?;
            let (kind, constraint) = join_kind(&j.join_operator)?;
            left = merge_join(left, right, kind, constraint, self.using_names.borrow().get(&key_of(j)).map(|v| v.as_slice()))?;
        }
        Ok(left)
    }

    fn factor_item(&self, f: &TableFactor, outer: &[Level]) -> Result<Item> {
        match f {
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let item = self.join_item(table_with_joins, outer)?;
                Ok(match alias {
                    None => item,
                    Some(a) => {
                        let q = ident(&a.name);
                        let mut cols = item.cols;
                        let names: Vec<String> = cols.iter().map(|c| c.name.clone()).collect();
                        let aliases = join_aliases(&names, a);
                        // A column takes the alias's name, else its input's
                        // (as that prints now: `j.x AS a` after a rename). One
                        // added under the join since the view was made keeps its
                        // own name, made unique among the join's.
                        for (c, al) in cols.iter_mut().zip(&aliases) {
                            if let Some(al) = al {
                                c.shown = al.clone();
                                c.name = if is_dropped(&c.name) { format!("{DROPPED_COL}{al}") } else { al.clone() };
                            }
                        }
                        let mut taken: Vec<Option<String>> =
                            cols.iter().filter(|c| is_known(&c.name)).map(|c| Some(c.shown.clone())).collect();
                        let st = UsingState { unique: false, names: Vec::new() };
                        for c in cols.iter_mut() {
                            if c.name.starts_with(NEW_COL) {
                                c.shown = make_colname_unique(&c.shown, &taken, &st, &[]);
                                taken.push(Some(c.shown.clone()));
                            }
                            c.text = format!("{}.{}", quote(&q), quote(&c.shown));
                        }
                        Item { written: Some(q.clone()), refname: Some(q), cols, inner: Vec::new() }
                    }
                })
            }
            TableFactor::Table { name, alias, args: None, .. } => {
                let rel = super::relation(self.planner.catalog, &self.planner.database, name)?;
                let q = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| rel.name.clone());
                let cols = self.relation_columns(f)?;
                let shown = self.colnames.borrow().get(&key_of(f)).cloned();
                Ok(relation_item(q.clone(), self.refname(f, q, outer), cols, shown))
            }
            // A function in FROM: named by its alias or its own name.
            TableFactor::Table { name, alias, args: Some(_), with_ordinality: false, .. } => {
                let (_, fname) = object_name(name)?;
                let q = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(fname);
                let rel_cols = self.planner.plan_factor_columns(f)?;
                Ok(base_item(q.clone(), self.refname(f, q, outer), rel_cols))
            }
            TableFactor::Derived { lateral: false, alias: Some(a), .. } => {
                let rel_cols = self.planner.plan_factor_columns(f)?;
                Ok(base_item(ident(&a.name), self.refname(f, ident(&a.name), outer), rel_cols))
            }
            _ => bail!(FeatureNotSupported, "view definition text: this FROM item is not deparsed"),
        }
    }

    /// The column names the relations of one FROM list print under, and the
    /// names of its joins' USING columns: ruleutils' set_using_names and
    /// set_relation_column_names. A USING column's name is pushed down to the
    /// columns it merges; when some unnamed join's merged column is not simply
    /// one input's (a FULL join's COALESCE, a cast), USING names are made
    /// unique across the query level; and every relation's column names are
    /// made unique against those and the USING names of the joins above it,
    /// `x` becoming `x_1`. Kept in `colnames` / `using_names` for the items
    /// and the FROM clause to use.
    fn assign_column_names(&self, from: &[ast::TableWithJoins], outer: &[Level]) -> Result<()> {
        let mut trees = Vec::with_capacity(from.len());
        for twj in from {
            trees.push(self.join_tree(twj, outer)?.0);
        }
        let mut st = UsingState { unique: trees.iter().any(JNode::dangerous), names: Vec::new() };
        for t in &mut trees {
            set_using_names(t, &[], &mut st);
        }
        for t in &trees {
            self.set_relation_names(t, &st);
        }
        Ok(())
    }

    /// The join tree of a FROM entry, with its output columns' (name, type).
    fn join_tree(&self, twj: &ast::TableWithJoins, outer: &[Level]) -> Result<(JNode, Vec<(String, Ty)>)> {
        let (mut node, mut cols) = self.factor_tree(&twj.relation, outer)?;
        for j in &twj.joins {
            let (right, rcols) = self.factor_tree(&j.relation, outer)?;
            let (kind, constraint) = join_kind(&j.join_operator)?;
            let using: Vec<String> = match constraint {
                ast::JoinConstraint::Using(ns) | ast::JoinConstraint::UsingAlias(ns, _) => {
                    ns.iter().map(|n| object_name(n).map(|x| x.1)).collect::<Result<_>>()?
                }
                ast::JoinConstraint::Natural => {
                    cols.iter().filter(|c| is_known(&c.0) && rcols.iter().any(|r| r.0 == c.0)).map(|c| c.0.clone()).collect()
                }
                _ => Vec::new(),
            };
            let mut map = Vec::new();
            let mut out = Vec::new();
            let mut dangerous = false;
            let (mut used_l, mut used_r) = (vec![false; cols.len()], vec![false; rcols.len()]);
            for n in &using {
                let (Some(li), Some(ri)) = (cols.iter().position(|c| &c.0 == n), rcols.iter().position(|c| &c.0 == n)) else {
                    bail!(UndefinedColumn, "column \"{n}\" specified in USING clause does not exist in one of the tables");
                };
                used_l[li] = true;
                used_r[ri] = true;
                let (ty, side) = merged_input(kind, cols[li].1, rcols[ri].1);
                dangerous |= side.is_none();
                map.push((Some(li), Some(ri)));
                out.push((n.clone(), ty));
            }
            for (i, c) in cols.iter().enumerate().filter(|(i, _)| !used_l[*i]) {
                map.push((Some(i), None));
                out.push(c.clone());
            }
            for (i, c) in rcols.iter().enumerate().filter(|(i, _)| !used_r[*i]) {
                map.push((None, Some(i)));
                out.push(c.clone());
            }
            let n = out.len();
            node = JNode::Join {
                key: Some(key_of(j)),
                left: Box::new(node),
                right: Box::new(right),
                using,
                named: false,
                dangerous,
                map,
                colnames: vec![None; n],
                parent_using: Vec::new(),
            };
            cols = out;
        }
        Ok((node, cols))
    }

    fn factor_tree(&self, f: &TableFactor, outer: &[Level]) -> Result<(JNode, Vec<(String, Ty)>)> {
        match f {
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let (mut node, mut cols) = self.join_tree(table_with_joins, outer)?;
                if let Some(a) = alias {
                    let names: Vec<String> = cols.iter().map(|c| c.0.clone()).collect();
                    for (c, al) in cols.iter_mut().zip(join_aliases(&names, a)) {
                        if let Some(al) = al {
                            c.0 = if is_dropped(&c.0) { format!("{DROPPED_COL}{al}") } else { al };
                        }
                    }
                    if let JNode::Join { named, .. } = &mut node {
                        *named = true;
                    }
                }
                Ok((node, cols))
            }
            _ => {
                let item = self.factor_item(f, outer)?;
                let cols: Vec<(String, Ty)> = item.cols.iter().map(|c| (c.name.clone(), c.ty)).collect();
                let table = matches!(f, TableFactor::Table { args: None, .. });
                let written = match table {
                    true => self.relation_columns(f)?.into_iter().map(|c| c.1).collect(),
                    false => cols.iter().map(|c| c.0.clone()).collect(),
                };
                let n = cols.len();
                let base = JNode::Base { key: key_of(f), table, written, colnames: vec![None; n], parent_using: Vec::new() };
                Ok((base, cols))
            }
        }
    }

    /// set_relation_column_names over a tree's relations; the USING names
    /// chosen for its joins.
    fn set_relation_names(&self, node: &JNode, st: &UsingState) {
        match node {
            JNode::Join { key, left, right, using, colnames, .. } => {
                let chosen: Vec<String> = colnames.iter().take(using.len()).flatten().cloned().collect();
                if let Some(k) = key.filter(|_| !using.is_empty() && &chosen != using) {
                    self.using_names.borrow_mut().insert(k, chosen);
                }
                self.set_relation_names(left, st);
                self.set_relation_names(right, st);
            }
            JNode::Base { key, table, written, colnames, parent_using, .. } => {
                let mut names = colnames.clone();
                for i in 0..names.len() {
                    if is_dropped(&written[i]) {
                        names[i] = Some(written[i].clone());
                    } else if names[i].is_none() {
                        let n = make_colname_unique(&written[i], &names, st, parent_using);
                        names[i] = Some(n);
                    }
                }
                let names: Vec<String> = names.into_iter().flatten().collect();
                // Only relations print column aliases of ruleutils' choosing.
                if *table && &names != written {
                    self.colnames.borrow_mut().insert(*key, names);
                }
            }
        }
    }

    /// A relation's columns in the order the view's SQL knows them: the name
    /// the query uses, the name it prints under unless ruleutils picks
    /// another (its alias, else its real name), and its type. Under
    /// `altered`, a dropped column keeps its place under a `DROPPED_COL`
    /// name and the columns added since follow under `NEW_COL` names.
    fn relation_columns(&self, f: &TableFactor) -> Result<Vec<(String, String, Ty)>> {
        let TableFactor::Table { name, alias, args: None, .. } = f else {
            bail!(FeatureNotSupported, "view definition text: this FROM item is not deparsed");
        };
        let real = self.planner.plan_factor_columns(&plain_table(f))?;
        let alias_at = |i: usize| alias.as_ref().and_then(|a| a.columns.get(i)).map(|c| ident(&c.name));
        let rel = super::relation(self.planner.catalog, &self.planner.database, name)?;
        let altered = self
            .altered
            .filter(|a| a.name == rel.name && rel.database().ok().as_deref() == Some(a.database.as_str()) && a.now.len() == real.len());
        let Some(a) = altered else {
            return Ok(real
                .into_iter()
                .enumerate()
                .map(|(i, (n, ty))| {
                    let w = alias_at(i).unwrap_or(n);
                    (w.clone(), w, Ty::Sql(ty))
                })
                .collect());
        };
        let mut out = Vec::with_capacity(a.old.len() + real.len());
        for (o, old) in a.old.iter().enumerate() {
            let q = alias_at(o).unwrap_or_else(|| old.clone());
            match a.now.iter().position(|x| *x == Some(o)) {
                Some(j) => {
                    let (n, ty) = &real[j];
                    out.push((q, alias_at(o).unwrap_or_else(|| n.clone()), Ty::Sql(*ty)));
                }
                None => out.push((format!("{DROPPED_COL}{q}"), format!("{DROPPED_COL}{q}"), Ty::Any)),
            }
        }
        for ((n, ty), _) in real.iter().zip(&a.now).filter(|(_, o)| o.is_none()) {
            out.push((format!("{NEW_COL}{n}"), n.clone(), Ty::Sql(*ty)));
        }
        Ok(out)
    }

    /// The reference name of a relation: `wanted`, or `wanted_N` when an
    /// enclosing query or an earlier item of this one has it.
    fn refname(&self, f: &TableFactor, wanted: String, outer: &[Level]) -> String {
        let key = f as *const TableFactor as usize;
        if let Some(n) = self.refnames.borrow().get(&key) {
            return n.clone();
        }
        fn names(it: &Item, out: &mut Vec<String>) {
            out.extend(it.refname.clone());
            for i in &it.inner {
                names(i, out);
            }
        }
        let mut used = self.taken.borrow().clone();
        for l in outer {
            for it in &l.items {
                names(it, &mut used);
            }
        }
        let mut name = wanted.clone();
        let mut n = 0;
        while used.contains(&name) {
            n += 1;
            name = format!("{wanted}_{n}");
        }
        self.taken.borrow_mut().push(name.clone());
        self.refnames.borrow_mut().insert(key, name.clone());
        name
    }

    /// The scope items of the `n`th join's two sides.
    fn join_sides(&self, twj: &ast::TableWithJoins, n: usize, outer: &[Level]) -> Result<(Item, Item)> {
        let mut left = self.factor_item(&twj.relation, outer)?;
        for jj in &twj.joins[..n - 1] {
            let right = self.factor_item(&jj.relation, outer)?;
            let (k, c) = join_kind(&jj.join_operator)?;
            left = merge_join(left, right, k, c, self.using_names.borrow().get(&key_of(jj)).map(|v| v.as_slice()))?;
        }
        Ok((left, self.factor_item(&twj.joins[n - 1].relation, outer)?))
    }

    /// get_from_clause_item for a relation and its first `n` joins.
    fn from_join(&self, twj: &ast::TableWithJoins, n: usize, outer: &[Level], o: &mut Out) -> Result<()> {
        if n == 0 {
            return self.from_factor(&twj.relation, outer, o);
        }
        let j = &twj.joins[n - 1];
        let (kind, constraint) = join_kind(&j.join_operator)?;
        if !self.pretty {
            o.push("(");
        }
        self.from_join(twj, n - 1, outer, o)?;
        // The names NATURAL matched, as PostgreSQL stores them (none: a cross join).
        let shown_using = self.using_names.borrow().get(&key_of(j)).cloned();
        let natural = match constraint {
            ast::JoinConstraint::Natural => {
                let (left, right) = self.join_sides(twj, n, outer)?;
                let names = natural_names(&left, &right);
                shown_using.clone().filter(|s| s.len() == names.len()).unwrap_or(names)
            }
            _ => Vec::new(),
        };
        let has_quals = match constraint {
            ast::JoinConstraint::None => false,
            ast::JoinConstraint::Natural => !natural.is_empty(),
            _ => true,
        };
        o.keyword(
            match kind {
                JoinKind::Inner if has_quals => " JOIN ",
                JoinKind::Inner => " CROSS JOIN ",
                JoinKind::Left => " LEFT JOIN ",
                JoinKind::Right => " RIGHT JOIN ",
                JoinKind::Full => " FULL JOIN ",
            },
            -INDENT_STD,
            INDENT_STD,
            INDENT_JOIN,
        );
        let paren_right = self.pretty
            && matches!(&j.relation, TableFactor::NestedJoin { alias: None, table_with_joins } if !table_with_joins.joins.is_empty());
        if paren_right {
            o.push("(");
        }
        self.from_factor(&j.relation, outer, o)?;
        if paren_right {
            o.push(")");
        }
        match constraint {
            ast::JoinConstraint::Using(names) | ast::JoinConstraint::UsingAlias(names, _) => {
                let mut names: Vec<String> = names.iter().map(|n| object_name(n).map(|x| x.1)).collect::<Result<_>>()?;
                if let Some(shown) = shown_using.filter(|s| s.len() == names.len()) {
                    names = shown;
                }
                let names: Vec<String> = names.iter().map(|n| quote(n)).collect();
                o.push(&format!(" USING ({})", names.join(", ")));
                if let ast::JoinConstraint::UsingAlias(_, alias) = constraint {
                    o.push(&format!(" AS {}", quote(&ident(alias))));
                }
            }
            ast::JoinConstraint::Natural => {
                let names = natural;
                if names.is_empty() {
                    if kind != JoinKind::Inner {
                        o.push(" ON TRUE");
                    }
                } else {
                    let names: Vec<String> = names.iter().map(|n| quote(n)).collect();
                    o.push(&format!(" USING ({})", names.join(", ")));
                }
            }
            ast::JoinConstraint::On(e) => {
                let (left, right) = self.join_sides(twj, n, outer)?;
                let level = Level { items: vec![left, right] };
                let scope = self.chain(outer, &level);
                o.push(" ON ");
                if !self.pretty {
                    o.push("(");
                }
                self.expr(e, &scope, None, Parent::Top, o)?;
                if !self.pretty {
                    o.push(")");
                }
            }
            ast::JoinConstraint::None => {
                if kind != JoinKind::Inner {
                    o.push(" ON TRUE");
                }
            }
        }
        if !self.pretty {
            o.push(")");
        }
        Ok(())
    }

    fn from_factor(&self, f: &TableFactor, outer: &[Level], o: &mut Out) -> Result<()> {
        match f {
            TableFactor::Table { name, alias, args: None, .. } => {
                let rel = super::relation(self.planner.catalog, &self.planner.database, name)?;
                let schema = match &rel.schema {
                    Some(super::SchemaRef::Database(d)) if *d == self.planner.database => None,
                    Some(super::SchemaRef::Database(d)) => Some(d.clone()),
                    Some(super::SchemaRef::System(s)) if s == "information_schema" => Some(s.clone()),
                    _ => None,
                };
                if let Some(s) = schema {
                    o.push(&quote(&s));
                    o.push(".");
                }
                // A temporary relation under the name the session wrote (its
                // stored name is private); `FROM t` keeps `t` as an implicit alias.
                let temp = self.planner.temp_names.iter().find(|(_, stored)| *stored == rel.name).map(|(user, _)| user.clone());
                let name = temp.clone().unwrap_or_else(|| rel.name.clone());
                o.push(&quote(&name));
                let refname = self.refnames.borrow().get(&(f as *const TableFactor as usize)).cloned();
                let refname = refname.unwrap_or_else(|| name.clone());
                let implicit = temp.is_some() && alias.as_ref().is_some_and(|a| !a.explicit && ident(&a.name) == name);
                // A relation's column aliases print when any differs from the
                // column's real name (set_relation_column_names' printaliases).
                let real: Vec<String> = self.planner.plan_factor_columns(&plain_table(f))?.into_iter().map(|c| c.0).collect();
                let shown = match self.colnames.borrow().get(&key_of(f)).cloned() {
                    Some(names) => names,
                    None => self.relation_columns(f)?.into_iter().map(|c| c.1).collect(),
                };
                let shown: Vec<String> = shown.into_iter().filter(|n| !is_dropped(n)).collect();
                let print_aliases = shown != real;
                if (alias.is_some() && !implicit) || refname != name || print_aliases {
                    o.push(" ");
                    o.push(&quote(&refname));
                }
                if print_aliases {
                    let names: Vec<String> = shown.iter().map(|c| quote(c)).collect();
                    o.push(&format!("({})", names.join(", ")));
                }
                Ok(())
            }
            // RTE_FUNCTION: the call, then always the alias and its column list.
            TableFactor::Table { name, args: Some(args), with_ordinality: false, .. } => {
                let (_, fname) = object_name(name)?;
                let item = self.factor_item(f, outer)?;
                let scope = self.chain(outer, &Level::default());
                o.push(&quote(&fname));
                o.push("(");
                for (i, a) in args.args.iter().enumerate() {
                    if i > 0 {
                        o.push(", ");
                    }
                    let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a else {
                        bail!(FeatureNotSupported, "view definition text: this argument is not deparsed");
                    };
                    let cast = (self.ty(x, &scope) == Ty::Unknown && self.literal(x) != Some(Lit::Null)).then_some(Ty::Sql(SqlType::Text));
                    self.expr(x, &scope, cast, Parent::Func, o)?;
                }
                o.push(") ");
                o.push(&quote(item.refname.as_deref().unwrap_or(&fname)));
                let cols: Vec<String> = item.cols.iter().map(|c| quote(&c.name)).collect();
                o.push(&format!("({})", cols.join(", ")));
                Ok(())
            }
            TableFactor::Derived { subquery, alias: Some(a), .. } => {
                o.push("(");
                let mut inner = Out { buf: String::new(), indent: o.indent };
                self.query(subquery, outer, Labels::Derived, &mut inner)?;
                o.push(&inner.buf);
                o.push(")");
                o.push(" ");
                let refname = self.refnames.borrow().get(&(f as *const TableFactor as usize)).cloned();
                o.push(&quote(&refname.unwrap_or_else(|| ident(&a.name))));
                alias_columns(a, o);
                Ok(())
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                match alias {
                    None => self.from_join(table_with_joins, table_with_joins.joins.len(), outer, o)?,
                    Some(a) => {
                        // A join with an alias prints its own parentheses.
                        let n = table_with_joins.joins.len();
                        if n == 0 {
                            bail!(FeatureNotSupported, "view definition text: a parenthesized table with an alias");
                        }
                        if self.pretty {
                            o.push("(");
                        }
                        self.from_join(table_with_joins, n, outer, o)?;
                        if self.pretty {
                            o.push(")");
                        }
                        o.push(" ");
                        o.push(&quote(&ident(&a.name)));
                        let inner = self.join_item(table_with_joins, outer)?;
                        if inner.cols.iter().any(|c| !is_known(&c.name)) {
                            // Columns added or dropped under it since the view
                            // was made: the names as set_join_column_names
                            // assigns them, printed when any differs from its
                            // input column's.
                            let item = self.factor_item(f, outer)?;
                            let pairs: Vec<(&Col, &Col)> =
                                item.cols.iter().zip(&inner.cols).filter(|(c, _)| !is_dropped(&c.name)).collect();
                            if pairs.iter().any(|(c, ic)| c.shown != ic.shown) {
                                let names: Vec<String> = pairs.iter().map(|(c, _)| quote(&c.shown)).collect();
                                o.push(&format!("({})", names.join(", ")));
                            }
                        } else {
                            alias_columns(a, o);
                        }
                    }
                }
                Ok(())
            }
            _ => bail!(FeatureNotSupported, "view definition text: this FROM item is not deparsed"),
        }
    }

    /// A column reference: the item column it names.
    fn resolve(&self, e: &E, scope: &[Level]) -> Result<Col> {
        let parts: Vec<String> = match unnest(e) {
            E::Identifier(i) => vec![ident(i)],
            E::CompoundIdentifier(ids) => ids.iter().map(ident).collect(),
            _ => bail!(FeatureNotSupported, "view definition text: not a column"),
        };
        for level in scope.iter().rev() {
            match parts.as_slice() {
                [name] => {
                    for it in &level.items {
                        if let Some(c) = it.cols.iter().find(|c| &c.name == name) {
                            return Ok(c.clone());
                        }
                    }
                }
                [.., q, name] => {
                    for it in &level.items {
                        if let Some(found) = it.find(q) {
                            if let Some(c) = found.cols.iter().find(|c| &c.name == name) {
                                return Ok(c.clone());
                            }
                        }
                    }
                }
                [] => {}
            }
        }
        bail!(UndefinedColumn, "column \"{}\" does not exist", parts.join("."))
    }

    /// The type an expression has, as far as the deparser can tell.
    fn ty(&self, e: &E, scope: &[Level]) -> Ty {
        match unnest(e) {
            E::Identifier(_) | E::CompoundIdentifier(_) => self.resolve(e, scope).map(|c| c.ty).unwrap_or(Ty::Any),
            E::Value(v) => match &v.value {
                Value::Number(n, _) => number_type(n),
                Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_) | Value::Null => Ty::Unknown,
                Value::Boolean(_) => Ty::Sql(SqlType::Bool),
                _ => Ty::Any,
            },
            E::UnaryOp { op: UnaryOperator::Minus, expr } => self.ty(expr, scope),
            E::UnaryOp { op: UnaryOperator::Not, .. } => Ty::Sql(SqlType::Bool),
            E::Cast { data_type, .. } => super::bind::sql_type(data_type).map(Ty::Sql).unwrap_or(Ty::Any),
            E::BinaryOp { left, op, right } => match op {
                BinaryOperator::And | BinaryOperator::Or => Ty::Sql(SqlType::Bool),
                BinaryOperator::StringConcat => Ty::Sql(SqlType::Text),
                _ => match op_name(op) {
                    Some(o) if is_comparison(o) => Ty::Sql(SqlType::Bool),
                    Some("+" | "-" | "*" | "/" | "%") => {
                        let (l, r) = (self.ty(left, scope), self.ty(right, scope));
                        match (l, r) {
                            (Ty::Unknown, t) | (t, Ty::Unknown) => t,
                            _ if l.numeric_rank().is_some() && r.numeric_rank().is_some() => common(l, r),
                            _ => Ty::Any,
                        }
                    }
                    _ => Ty::Any,
                },
            },
            E::IsNull(_) | E::IsNotNull(_) | E::IsTrue(_) | E::IsFalse(_) | E::IsNotTrue(_) | E::IsNotFalse(_) => Ty::Sql(SqlType::Bool),
            E::In { .. } | E::Between { .. } | E::Like { .. } | E::ILike { .. } | E::Exists { .. } => Ty::Sql(SqlType::Bool),
            E::Function(f) => {
                let name = f.name.to_string().to_lowercase();
                match name.as_str() {
                    "count" | "row_number" | "rank" | "dense_rank" => Ty::Sql(SqlType::Int8),
                    "now" | "current_timestamp" => Ty::Sql(SqlType::TimestampTz),
                    "lower" | "upper" | "concat" | "substr" | "btrim" | "ltrim" | "rtrim" | "md5" | "repeat" => Ty::Sql(SqlType::Text),
                    "length" | "char_length" | "strpos" => Ty::Sql(SqlType::Int4),
                    "min" | "max" | "abs" | "coalesce" | "greatest" | "least" | "nullif" => match &f.args {
                        ast::FunctionArguments::List(l) if l.args.len() == 1 => match &l.args[0] {
                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a)) => self.ty(a, scope),
                            _ => Ty::Any,
                        },
                        _ => Ty::Any,
                    },
                    _ => Ty::Any,
                }
            }
            _ => Ty::Any,
        }
    }

    fn kind(&self, e: &E) -> Kind {
        match unnest(e) {
            E::BinaryOp { op: BinaryOperator::And, .. } | E::Between { negated: false, .. } => Kind::And,
            E::BinaryOp { op: BinaryOperator::Or, .. } | E::Between { negated: true, .. } => Kind::Or,
            E::BinaryOp { op, .. } => Kind::Op(op_name(op).unwrap_or("?")),
            E::Like { negated, .. } => Kind::Op(if *negated { "!~~" } else { "~~" }),
            E::ILike { negated, .. } => Kind::Op(if *negated { "!~~*" } else { "~~*" }),
            E::UnaryOp { op: UnaryOperator::Not, .. }
            | E::Exists { negated: true, .. }
            | E::In { target: ast::InTarget::Subquery(_), negated: true, .. } => Kind::Not,
            E::UnaryOp { op: UnaryOperator::Minus, expr } if matches!(unnest(expr), E::Value(_)) => Kind::Simple,
            E::UnaryOp { .. } => Kind::Op("-"),
            E::In { target: ast::InTarget::List(list), .. } if list.len() == 1 => Kind::Op("="),
            E::IsNull(_)
            | E::IsNotNull(_)
            | E::IsTrue(_)
            | E::IsFalse(_)
            | E::IsNotTrue(_)
            | E::IsNotFalse(_)
            | E::IsDistinctFrom(..)
            | E::IsNotDistinctFrom(..)
            | E::Exists { .. }
            | E::In { .. }
            | E::Subquery(_) => Kind::Test,
            _ => Kind::Simple,
        }
    }

    /// get_rule_expr_paren: `e` under `parent`, with `cast` (an implicit
    /// cast PostgreSQL's parser added) shown.
    fn expr(&self, e: &E, scope: &[Level], cast: Option<Ty>, parent: Parent, o: &mut Out) -> Result<()> {
        let e = unnest(e);
        if let Some(t) = cast {
            return self.cast(e, scope, t, o);
        }
        let paren = self.pretty && parent != Parent::Top && !is_simple(self.kind(e), parent);
        if paren {
            o.push("(");
        }
        self.expr_bare(e, scope, o)?;
        if paren {
            o.push(")");
        }
        Ok(())
    }

    /// get_coercion_expr: a literal becomes a constant of the type
    /// (`'x'::text`, `1::double precision`), anything else `arg::type`.
    fn cast(&self, e: &E, scope: &[Level], t: Ty, o: &mut Out) -> Result<()> {
        let e = unnest(e);
        if let Some(text) = self.literal(e) {
            // A constant of the target type prints bare where PostgreSQL's
            // get_const_expr needs no label.
            match (t, &text) {
                (Ty::Sql(SqlType::Int4), Lit::Number(n)) if !n.starts_with('-') => o.push(n),
                (Ty::Sql(SqlType::Bool), Lit::Bool(b)) => o.push(if *b { "true" } else { "false" }),
                (_, Lit::Number(n)) if n.starts_with('-') => o.push(&format!("'{n}'::{}", t.name())),
                // A number is a constant of its own type, cast: `(1)::double precision` unless pretty.
                (_, Lit::Number(n)) if self.pretty => o.push(&format!("{n}::{}", t.name())),
                (_, Lit::Number(n)) => o.push(&format!("({n})::{}", t.name())),
                // An untyped literal is a constant of the type, printed as get_const_expr does.
                (Ty::Sql(SqlType::Int4), Lit::Str(s)) if s.trim().parse::<i32>().is_ok_and(|v| v >= 0) => o.push(s.trim()),
                (Ty::Sql(SqlType::Bool), Lit::Str(s)) if matches!(s.trim().to_lowercase().as_str(), "t" | "true" | "f" | "false") => {
                    o.push(if s.trim().to_lowercase().starts_with('t') { "true" } else { "false" })
                }
                (_, Lit::Str(s)) => o.push(&format!("{}::{}", quote_literal(s), t.name())),
                (_, Lit::Null) => o.push(&format!("NULL::{}", t.name())),
                (_, Lit::Bool(b)) => o.push(&format!("{}::{}", b, t.name())),
            }
            return Ok(());
        }
        if !self.pretty {
            o.push("(");
        }
        self.expr(e, scope, None, Parent::Cast, o)?;
        if !self.pretty {
            o.push(")");
        }
        o.push("::");
        o.push(t.name());
        Ok(())
    }

    fn literal(&self, e: &E) -> Option<Lit> {
        match unnest(e) {
            E::Value(v) => match &v.value {
                Value::Number(n, _) => Some(Lit::Number(n.clone())),
                Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(Lit::Str(s.clone())),
                Value::Null => Some(Lit::Null),
                Value::Boolean(b) => Some(Lit::Bool(*b)),
                _ => None,
            },
            E::UnaryOp { op: UnaryOperator::Minus, expr } => match unnest(expr) {
                E::Value(v) => match &v.value {
                    Value::Number(n, _) => Some(Lit::Number(format!("-{n}"))),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// A binary operator with its arguments' implicit casts.
    fn binary(&self, l: &E, op: &'static str, r: &E, scope: &[Level], o: &mut Out) -> Result<()> {
        let (lt, rt) = (self.ty(l, scope), self.ty(r, scope));
        let (lc, rc) = operand_casts(op, lt, rt);
        if !self.pretty {
            o.push("(");
        }
        self.expr(l, scope, lc, Parent::Op(op, true), o)?;
        o.push(&format!(" {op} "));
        self.expr(r, scope, rc, Parent::Op(op, false), o)?;
        if !self.pretty {
            o.push(")");
        }
        Ok(())
    }

    /// AND / OR, flattened as PostgreSQL's grammar does (`a AND b AND c` is one node).
    fn bool_list(&self, e: &E, scope: &[Level], and: bool, o: &mut Out) -> Result<()> {
        let want = if and { BinaryOperator::And } else { BinaryOperator::Or };
        let mut args = Vec::new();
        let mut cur = e;
        while let E::BinaryOp { left, op, right } = unnest(cur) {
            if *op != want {
                break;
            }
            args.push(&**right);
            cur = left;
        }
        args.push(cur);
        args.reverse();
        if !self.pretty {
            o.push("(");
        }
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                o.push(if and { " AND " } else { " OR " });
            }
            self.expr(a, scope, bool_cast(self.ty(a, scope)), if and { Parent::And } else { Parent::Or }, o)?;
        }
        if !self.pretty {
            o.push(")");
        }
        Ok(())
    }

    fn expr_bare(&self, e: &E, scope: &[Level], o: &mut Out) -> Result<()> {
        match e {
            E::Identifier(_) | E::CompoundIdentifier(_) => {
                let c = self.resolve(e, scope)?;
                o.push(&c.text);
            }
            E::Value(_) | E::UnaryOp { op: UnaryOperator::Minus, .. } if self.literal(e).is_some() => {
                match self.literal(e).unwrap_or(Lit::Null) {
                    Lit::Number(n) => match number_type(n.trim_start_matches('-')) {
                        Ty::Sql(SqlType::Int4) if !n.starts_with('-') => o.push(&n),
                        Ty::Numeric if !n.starts_with('-') && n.contains(['.', 'e', 'E']) => o.push(&n),
                        t => o.push(&format!("'{n}'::{}", t.name())),
                    },
                    Lit::Str(s) => o.push(&format!("{}::text", quote_literal(&s))),
                    Lit::Null => o.push("NULL::text"),
                    Lit::Bool(b) => o.push(if b { "true" } else { "false" }),
                }
            }
            E::BinaryOp { op: BinaryOperator::And, .. } => self.bool_list(e, scope, true, o)?,
            E::BinaryOp { op: BinaryOperator::Or, .. } => self.bool_list(e, scope, false, o)?,
            E::BinaryOp { left, op, right } => {
                let Some(name) = op_name(op) else { bail!(FeatureNotSupported, "view definition text: operator {op}") };
                self.binary(left, name, right, scope, o)?;
            }
            E::Like { negated, any: false, expr, pattern, escape_char: None } => {
                self.binary(expr, if *negated { "!~~" } else { "~~" }, pattern, scope, o)?
            }
            E::ILike { negated, any: false, expr, pattern, escape_char: None } => {
                self.binary(expr, if *negated { "!~~*" } else { "~~*" }, pattern, scope, o)?
            }
            E::UnaryOp { op: UnaryOperator::Not, expr } => {
                if !self.pretty {
                    o.push("(");
                }
                o.push("NOT ");
                self.expr(expr, scope, bool_cast(self.ty(expr, scope)), Parent::Not, o)?;
                if !self.pretty {
                    o.push(")");
                }
            }
            E::UnaryOp { op: UnaryOperator::Minus, expr } => {
                if !self.pretty {
                    o.push("(");
                }
                o.push("- ");
                self.expr(expr, scope, None, Parent::Op("-", false), o)?;
                if !self.pretty {
                    o.push(")");
                }
            }
            E::IsNull(x) | E::IsNotNull(x) | E::IsTrue(x) | E::IsFalse(x) | E::IsNotTrue(x) | E::IsNotFalse(x) => {
                let suffix = match e {
                    E::IsNull(_) => " IS NULL",
                    E::IsNotNull(_) => " IS NOT NULL",
                    E::IsTrue(_) => " IS TRUE",
                    E::IsFalse(_) => " IS FALSE",
                    E::IsNotTrue(_) => " IS NOT TRUE",
                    _ => " IS NOT FALSE",
                };
                if !self.pretty {
                    o.push("(");
                }
                let cast = if suffix.contains("NULL") { None } else { bool_cast(self.ty(x, scope)) };
                self.expr(x, scope, cast, Parent::Other, o)?;
                o.push(suffix);
                if !self.pretty {
                    o.push(")");
                }
            }
            E::Between { expr, negated, low, high } => {
                // The parser writes BETWEEN out as two comparisons.
                let (a, b, join) = if *negated { ("<", ">", " OR ") } else { (">=", "<=", " AND ") };
                if !self.pretty {
                    o.push("(");
                }
                let parent = if *negated { Parent::Or } else { Parent::And };
                let l = o.capture(|o| self.binary(expr, a, low, scope, o))?;
                let r = o.capture(|o| self.binary(expr, b, high, scope, o))?;
                let _ = parent;
                o.push(&l);
                o.push(join);
                o.push(&r);
                if !self.pretty {
                    o.push(")");
                }
            }
            E::In { expr, target: ast::InTarget::List(list), negated, .. } => {
                if list.len() == 1 {
                    return self.binary(expr, if *negated { "<>" } else { "=" }, &list[0], scope, o);
                }
                let lt = self.ty(expr, scope);
                let elem = list.iter().map(|x| self.ty(x, scope)).fold(lt, |a, b| if b == Ty::Unknown { a } else { common(a, b) });
                let elem = if elem == Ty::Unknown { Ty::Sql(SqlType::Text) } else { elem };
                if !self.pretty {
                    o.push("(");
                }
                let lc = if lt != elem && lt != Ty::Any && elem != Ty::Any && !(lt.is_int() && elem.is_int()) { Some(elem) } else { None };
                let op = if *negated { "<>" } else { "=" };
                self.expr(expr, scope, lc, Parent::Other, o)?;
                o.push(&format!(" {op} {} (ARRAY[", if *negated { "ALL" } else { "ANY" }));
                for (i, x) in list.iter().enumerate() {
                    if i > 0 {
                        o.push(", ");
                    }
                    let xt = self.ty(x, scope);
                    let c = if xt != elem && elem != Ty::Any { Some(elem) } else { None };
                    self.expr(x, scope, c, Parent::Func, o)?;
                }
                o.push("])");
                if !self.pretty {
                    o.push(")");
                }
            }
            E::Cast { kind: _, expr, data_type, format: None } => {
                let t = super::bind::sql_type(data_type)?;
                match self.literal(expr) {
                    // A literal cast is a constant of the type.
                    Some(Lit::Str(s)) if t == SqlType::Int4 && s.trim().parse::<i32>().is_ok_and(|v| v >= 0) => o.push(s.trim()),
                    Some(Lit::Str(s)) => o.push(&format!("{}::{}", quote_literal(&s), t.pg_name())),
                    _ => self.cast(expr, scope, Ty::Sql(t), o)?,
                }
            }
            E::Function(f) => self.function(f, scope, o)?,
            E::Case { operand, conditions, else_result, .. } => {
                o.keyword("CASE", 0, INDENT_VAR, 0);
                if let Some(x) = operand {
                    o.push(" ");
                    self.expr(x, scope, None, Parent::Top, o)?;
                }
                let result_ty = conditions
                    .iter()
                    .map(|c| self.ty(&c.result, scope))
                    .chain(else_result.iter().map(|x| self.ty(x, scope)))
                    .fold(Ty::Unknown, common);
                let result_ty = if result_ty == Ty::Unknown { Ty::Sql(SqlType::Text) } else { result_ty };
                let res_cast = |x: &E| {
                    let t = self.ty(x, scope);
                    if t == Ty::Unknown && result_ty != Ty::Any {
                        Some(result_ty)
                    } else {
                        None
                    }
                };
                for c in conditions {
                    o.keyword("WHEN ", 0, 0, 0);
                    match operand {
                        Some(x) => {
                            // `CASE x WHEN v` compares x = v.
                            let (_, rc) = operand_casts("=", self.ty(x, scope), self.ty(&c.condition, scope));
                            self.expr(&c.condition, scope, rc, Parent::Func, o)?;
                        }
                        None => self.expr(&c.condition, scope, None, Parent::Func, o)?,
                    }
                    o.push(" THEN ");
                    self.expr(&c.result, scope, res_cast(&c.result), Parent::Func, o)?;
                }
                o.keyword("ELSE ", 0, 0, 0);
                match else_result {
                    Some(x) => self.expr(x, scope, res_cast(x), Parent::Func, o)?,
                    None => o.push(&format!("NULL::{}", result_ty.name())),
                }
                o.keyword("END", -INDENT_VAR, 0, 0);
            }
            E::Subquery(q) => {
                o.push("(");
                let mut inner = Out { buf: String::new(), indent: o.indent };
                self.query(q, scope, Labels::Sublink, &mut inner)?;
                o.push(&inner.buf);
                o.push(")");
            }
            E::Exists { subquery, negated } | E::In { target: ast::InTarget::Subquery(subquery), negated, .. } => {
                // get_sublink_expr: `(EXISTS (…))`, `(x IN (…))`.
                if *negated {
                    if !self.pretty {
                        o.push("(");
                    }
                    o.push("NOT ");
                }
                match e {
                    E::In { expr, .. } => {
                        o.push("(");
                        self.expr(expr, scope, None, Parent::Top, o)?;
                        o.push(" IN (");
                    }
                    _ => o.push("(EXISTS ("),
                }
                let mut inner = Out { buf: String::new(), indent: o.indent };
                self.query(subquery, scope, Labels::Sublink, &mut inner)?;
                o.push(&inner.buf);
                o.push("))");
                if *negated && !self.pretty {
                    o.push(")");
                }
            }
            E::IsDistinctFrom(l, r) | E::IsNotDistinctFrom(l, r) => {
                let not = matches!(e, E::IsNotDistinctFrom(..));
                let (lc, rc) = operand_casts("=", self.ty(l, scope), self.ty(r, scope));
                if not {
                    o.push("NOT (");
                } else if !self.pretty {
                    o.push("(");
                }
                self.expr(l, scope, lc, Parent::Other, o)?;
                o.push(" IS DISTINCT FROM ");
                self.expr(r, scope, rc, Parent::Other, o)?;
                if not || !self.pretty {
                    o.push(")");
                }
            }
            _ => bail!(FeatureNotSupported, "view definition text: expression {e} is not deparsed"),
        }
        Ok(())
    }

    /// A function or aggregate call: `name(args)`, `count(*)`, DISTINCT,
    /// FILTER and OVER.
    fn function(&self, f: &ast::Function, scope: &[Level], o: &mut Out) -> Result<()> {
        if !f.within_group.is_empty() || f.null_treatment.is_some() || !matches!(f.parameters, ast::FunctionArguments::None) {
            bail!(FeatureNotSupported, "view definition text: this call is not deparsed");
        }
        let (_, name) = object_name(&f.name)?;
        // SQL-standard value functions print in their keyword form.
        let keyword = match name.as_str() {
            "current_date" => Some("CURRENT_DATE"),
            "current_timestamp" => Some("CURRENT_TIMESTAMP"),
            "localtimestamp" => Some("LOCALTIMESTAMP"),
            "current_user" => Some("CURRENT_USER"),
            "session_user" => Some("SESSION_USER"),
            "current_role" => Some("CURRENT_ROLE"),
            _ => None,
        };
        if let (Some(k), ast::FunctionArguments::None) = (keyword, &f.args) {
            o.push(k);
            return Ok(());
        }
        // COALESCE, GREATEST, LEAST and NULLIF are syntax: upper case, and
        // their untyped arguments take the common type.
        if let (Some(k), ast::FunctionArguments::List(l)) = (
            match name.as_str() {
                "coalesce" => Some("COALESCE"),
                "greatest" => Some("GREATEST"),
                "least" => Some("LEAST"),
                "nullif" => Some("NULLIF"),
                _ => None,
            },
            &f.args,
        ) {
            let args: Vec<&E> = l
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x),
                    _ => bail!(FeatureNotSupported, "view definition text: this argument is not deparsed"),
                })
                .collect::<Result<_>>()?;
            let t = args.iter().map(|x| self.ty(x, scope)).fold(Ty::Unknown, common);
            let t = if t == Ty::Unknown { Ty::Sql(SqlType::Text) } else { t };
            o.push(k);
            o.push("(");
            for (i, x) in args.iter().enumerate() {
                if i > 0 {
                    o.push(", ");
                }
                let cast = (self.ty(x, scope) == Ty::Unknown && t != Ty::Any).then_some(t);
                self.expr(x, scope, cast, Parent::Func, o)?;
            }
            o.push(")");
            return Ok(());
        }
        o.push(&quote(&name));
        o.push("(");
        match &f.args {
            ast::FunctionArguments::None => {}
            ast::FunctionArguments::Subquery(_) => bail!(FeatureNotSupported, "view definition text: a call over a subquery"),
            ast::FunctionArguments::List(l) => {
                if matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
                    o.push("DISTINCT ");
                }
                for (i, a) in l.args.iter().enumerate() {
                    if i > 0 {
                        o.push(", ");
                    }
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => o.push("*"),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                            let cast =
                                (self.ty(x, scope) == Ty::Unknown && self.literal(x) != Some(Lit::Null)).then_some(Ty::Sql(SqlType::Text));
                            self.expr(x, scope, cast, Parent::Func, o)?;
                        }
                        _ => bail!(FeatureNotSupported, "view definition text: this argument is not deparsed"),
                    }
                }
                let mut order = None;
                for c in &l.clauses {
                    match c {
                        ast::FunctionArgumentClause::OrderBy(items) => order = Some(items),
                        _ => bail!(FeatureNotSupported, "view definition text: this call clause is not deparsed"),
                    }
                }
                if let Some(items) = order {
                    o.push(" ORDER BY ");
                    self.order_items(items, scope, o)?;
                }
            }
        }
        o.push(")");
        if let Some(filter) = &f.filter {
            o.push(" FILTER (WHERE ");
            self.expr(filter, scope, None, Parent::Top, o)?;
            o.push(")");
        }
        if let Some(over) = &f.over {
            let ast::WindowType::WindowSpec(spec) = over else {
                bail!(FeatureNotSupported, "view definition text: a named window");
            };
            if spec.window_name.is_some() {
                bail!(FeatureNotSupported, "view definition text: a window that names another");
            }
            let (exclusion, partition_by) = crate::parser::frame_exclusion(&spec.partition_by);
            o.push(" OVER (");
            let mut sep = "";
            if !partition_by.is_empty() {
                o.push("PARTITION BY ");
                for (i, p) in partition_by.iter().enumerate() {
                    if i > 0 {
                        o.push(", ");
                    }
                    self.sort_expr(p, scope, o)?;
                }
                sep = " ";
            }
            if !spec.order_by.is_empty() {
                o.push(sep);
                o.push("ORDER BY ");
                self.order_items(&spec.order_by, scope, o)?;
                sep = " ";
            }
            if let Some(frame) = &spec.window_frame {
                // get_rule_windowspec: every part followed by a space, the last one taken off.
                o.push(sep);
                o.push(match frame.units {
                    ast::WindowFrameUnits::Rows => "ROWS ",
                    ast::WindowFrameUnits::Range => "RANGE ",
                    ast::WindowFrameUnits::Groups => "GROUPS ",
                });
                if frame.end_bound.is_some() {
                    o.push("BETWEEN ");
                }
                self.frame_bound(&frame.start_bound, scope, o)?;
                if let Some(end) = &frame.end_bound {
                    o.push("AND ");
                    self.frame_bound(end, scope, o)?;
                }
                o.push(match exclusion {
                    Some(crate::parser::FrameExclusion::CurrentRow) => "EXCLUDE CURRENT ROW ",
                    Some(crate::parser::FrameExclusion::Group) => "EXCLUDE GROUP ",
                    Some(crate::parser::FrameExclusion::Ties) => "EXCLUDE TIES ",
                    None => "",
                });
                o.trim();
            }
            o.push(")");
        }
        Ok(())
    }

    fn frame_bound(&self, b: &ast::WindowFrameBound, scope: &[Level], o: &mut Out) -> Result<()> {
        let (offset, word) = match b {
            ast::WindowFrameBound::CurrentRow => {
                o.push("CURRENT ROW ");
                return Ok(());
            }
            ast::WindowFrameBound::Preceding(x) => (x, "PRECEDING "),
            ast::WindowFrameBound::Following(x) => (x, "FOLLOWING "),
        };
        match offset {
            None => o.push("UNBOUNDED "),
            Some(x) => {
                self.expr(x, scope, None, Parent::Top, o)?;
                o.push(" ");
            }
        }
        o.push(word);
        Ok(())
    }

    /// get_rule_sortgroupclause: a column bare, anything else in parentheses
    /// when pretty (and calls always, so they cannot read as CUBE / ROLLUP).
    fn sort_expr(&self, e: &E, scope: &[Level], o: &mut Out) -> Result<()> {
        let text = o.capture(|o| self.expr(e, scope, None, Parent::Top, o))?;
        self.sort_text(&text, sort_class(e), o);
        Ok(())
    }

    /// A select-list item's text as a sort or group key.
    fn sort_text(&self, text: &str, class: SortClass, o: &mut Out) {
        if class == SortClass::Column || !self.pretty && class == SortClass::Other {
            o.push(text);
        } else {
            o.push(&format!("({text})"));
        }
    }

    fn order_items(&self, items: &[ast::OrderByExpr], scope: &[Level], o: &mut Out) -> Result<()> {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                o.push(", ");
            }
            self.sort_expr(&item.expr, scope, o)?;
            sort_direction(&item.options, o);
        }
        Ok(())
    }
}

/// ` DESC`, and NULLS FIRST / LAST where they are not the direction's default.
fn sort_direction(options: &ast::OrderByOptions, o: &mut Out) {
    let desc = matches!(options.sort, Some(ast::OrderBySort::Desc));
    if desc {
        o.push(" DESC");
    }
    match (options.nulls_first, desc) {
        (Some(true), false) => o.push(" NULLS FIRST"),
        (Some(false), true) => o.push(" NULLS LAST"),
        _ => {}
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Number(String),
    Str(String),
    Null,
    Bool(bool),
}

/// An untyped literal where a boolean is wanted is a boolean constant.
fn bool_cast(t: Ty) -> Option<Ty> {
    (t == Ty::Unknown).then_some(Ty::Sql(SqlType::Bool))
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

fn join_kind(op: &ast::JoinOperator) -> Result<(JoinKind, &ast::JoinConstraint)> {
    use ast::JoinOperator as J;
    Ok(match op {
        J::Join(c) | J::Inner(c) | J::CrossJoin(c) => (JoinKind::Inner, c),
        J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
        J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
        J::FullOuter(c) => (JoinKind::Full, c),
        _ => bail!(FeatureNotSupported, "view definition text: this join is not deparsed"),
    })
}

/// A FROM item's AST node as a map key (its address: the AST outlives the deparse).
fn key_of<T>(x: &T) -> usize {
    x as *const T as usize
}

/// A relation factor without its alias (its columns under their own names).
fn plain_table(f: &TableFactor) -> TableFactor {
    let mut f = f.clone();
    if let TableFactor::Table { alias, .. } = &mut f {
        *alias = None;
    }
    f
}

/// One query level's join tree as ruleutils names its columns.
enum JNode {
    Base {
        key: usize,
        /// A relation (whose column aliases print when they differ from `written`).
        table: bool,
        /// The names its columns have in the query (alias columns applied).
        written: Vec<String>,
        /// Names pushed down from the joins above (USING columns).
        colnames: Vec<Option<String>>,
        parent_using: Vec<String>,
    },
    Join {
        key: Option<usize>,
        left: Box<JNode>,
        right: Box<JNode>,
        using: Vec<String>,
        /// `(…) AS j`: an alias stops names pushed from above.
        named: bool,
        /// A merged column that is not simply one input's column.
        dangerous: bool,
        /// Each output column's left and right input column.
        map: Vec<(Option<usize>, Option<usize>)>,
        colnames: Vec<Option<String>>,
        parent_using: Vec<String>,
    },
}

impl JNode {
    /// has_dangerous_join_using.
    fn dangerous(&self) -> bool {
        match self {
            JNode::Base { .. } => false,
            JNode::Join { left, right, dangerous, named, using, .. } => {
                (*dangerous && !*named && !using.is_empty()) || left.dangerous() || right.dangerous()
            }
        }
    }

    fn push_name(&mut self, i: usize, name: &str) {
        let colnames = match self {
            JNode::Base { colnames, .. } | JNode::Join { colnames, .. } => colnames,
        };
        if let Some(slot) = colnames.get_mut(i) {
            *slot = Some(name.to_string());
        }
    }

    fn set_parent_using(&mut self, names: &[String]) {
        match self {
            JNode::Base { parent_using, .. } | JNode::Join { parent_using, .. } => *parent_using = names.to_vec(),
        }
    }
}

/// dpns->unique_using and dpns->using_names.
struct UsingState {
    unique: bool,
    names: Vec<String>,
}

/// set_using_names for one join tree node.
fn set_using_names(node: &mut JNode, parent_using: &[String], st: &mut UsingState) {
    let JNode::Join { left, right, using, named, map, colnames, parent_using: own_parent, .. } = node else { return };
    if !*named {
        for (i, c) in colnames.iter().enumerate() {
            let Some(c) = c else { continue };
            if let Some(l) = map[i].0 {
                left.push_name(l, c);
            }
            if let Some(r) = map[i].1 {
                right.push_name(r, c);
            }
        }
    }
    let mut below = parent_using.to_vec();
    if !using.is_empty() {
        for (i, n) in using.iter().enumerate() {
            let name = match &colnames[i] {
                Some(c) => c.clone(),
                None => {
                    let c = make_colname_unique(n, colnames, st, own_parent);
                    if st.unique {
                        st.names.push(c.clone());
                    }
                    colnames[i] = Some(c.clone());
                    c
                }
            };
            below.push(name.clone());
            if let Some(l) = map[i].0 {
                left.push_name(l, &name);
            }
            if let Some(r) = map[i].1 {
                right.push_name(r, &name);
            }
        }
    }
    left.set_parent_using(&below);
    right.set_parent_using(&below);
    set_using_names(left, &below, st);
    set_using_names(right, &below, st);
}

/// make_colname_unique: `name`, else `name_1`, `name_2`, … unused by the
/// item's assigned names, the query level's unique USING names and the USING
/// names of the joins above.
fn make_colname_unique(name: &str, assigned: &[Option<String>], st: &UsingState, parent_using: &[String]) -> String {
    let taken =
        |c: &str| assigned.iter().flatten().any(|a| a == c) || st.names.iter().any(|a| a == c) || parent_using.iter().any(|a| a == c);
    if !taken(name) {
        return name.to_string();
    }
    let mut i = 1;
    loop {
        // NAMEDATALEN: the name is cut to keep every digit within 63 bytes.
        let suffix = format!("_{i}");
        let mut base = name.to_string();
        while base.len() + suffix.len() > 63 {
            base.pop();
        }
        let c = format!("{base}{suffix}");
        if !taken(&c) {
            return c;
        }
        i += 1;
    }
}

/// buildMergedJoinVar's choice: the merged column's type, and the input it
/// is (true: left) when it is simply that input's column.
fn merged_input(kind: JoinKind, l: Ty, r: Ty) -> (Ty, Option<bool>) {
    let rank_ty = |t: Ty| if t == Ty::Sql(SqlType::Numeric) { Ty::Numeric } else { t };
    let (lt, rt) = (rank_ty(l), rank_ty(r));
    let ty = common(lt, rt);
    let side = match kind {
        JoinKind::Inner if lt == ty => Some(true),
        JoinKind::Inner if rt == ty => Some(false),
        JoinKind::Left if lt == ty => Some(true),
        JoinKind::Right if rt == ty => Some(false),
        _ => None,
    };
    (ty, side)
}

/// The columns NATURAL matches: the left's visible names the right also has.
fn natural_names(left: &Item, right: &Item) -> Vec<String> {
    left.cols.iter().filter(|c| is_known(&c.name) && right.cols.iter().any(|r| r.name == c.name)).map(|c| c.name.clone()).collect()
}

/// A join's scope item: USING / NATURAL columns merged first (PostgreSQL's
/// buildMergedJoinVar: an inner join's merged column is whichever side needs
/// no cast, a LEFT / RIGHT join's is its outer side, a FULL join's or a cast
/// one's is a COALESCE, printed by its bare name), then the other columns.
fn merge_join(left: Item, right: Item, kind: JoinKind, constraint: &ast::JoinConstraint, shown: Option<&[String]>) -> Result<Item> {
    let names: Vec<String> = match constraint {
        ast::JoinConstraint::Using(ns) | ast::JoinConstraint::UsingAlias(ns, _) => {
            ns.iter().map(|n| object_name(n).map(|x| x.1)).collect::<Result<_>>()?
        }
        ast::JoinConstraint::Natural => natural_names(&left, &right),
        _ => Vec::new(),
    };
    let mut cols = Vec::new();
    let mut used_l = vec![false; left.cols.len()];
    let mut used_r = vec![false; right.cols.len()];
    for (i, n) in names.iter().enumerate() {
        let shown_name = shown.and_then(|s| s.get(i)).unwrap_or(n).clone();
        let li = left.cols.iter().position(|c| &c.name == n);
        let ri = right.cols.iter().position(|c| &c.name == n);
        let (Some(li), Some(ri)) = (li, ri) else {
            bail!(UndefinedColumn, "column \"{n}\" specified in USING clause does not exist in one of the tables");
        };
        used_l[li] = true;
        used_r[ri] = true;
        let (l, r) = (&left.cols[li], &right.cols[ri]);
        let (ty, side) = merged_input(kind, l.ty, r.ty);
        let c = match side {
            Some(true) => l.clone(),
            Some(false) => r.clone(),
            None => Col { name: n.clone(), shown: shown_name.clone(), ty, text: quote(&shown_name) },
        };
        cols.push(Col { name: n.clone(), shown: shown_name, ty, text: c.text });
    }
    cols.extend(left.cols.iter().zip(&used_l).filter(|(_, u)| !**u).map(|(c, _)| c.clone()));
    cols.extend(right.cols.iter().zip(&used_r).filter(|(_, u)| !**u).map(|(c, _)| c.clone()));
    Ok(Item { written: None, refname: None, cols, inner: vec![left, right] })
}

/// A function's or derived table's item under its reference name.
fn base_item(written: String, q: String, cols: Vec<(String, SqlType)>) -> Item {
    relation_item(written, q, cols.into_iter().map(|(n, ty)| (n.clone(), n, Ty::Sql(ty))).collect(), None)
}

/// A relation's item under its reference name: `cols` from
/// `Deparser::relation_columns`, `shown` the names ruleutils chose for them.
fn relation_item(written: String, q: String, cols: Vec<(String, String, Ty)>, shown: Option<Vec<String>>) -> Item {
    let cols = cols
        .into_iter()
        .enumerate()
        .map(|(i, (name, default, ty))| {
            let shown = shown.as_ref().and_then(|s| s.get(i)).cloned().unwrap_or(default);
            Col { text: format!("{}.{}", quote(&q), quote(&shown)), name, shown, ty }
        })
        .collect();
    Item { written: Some(written), refname: Some(q), cols, inner: Vec::new() }
}

/// The alias names a join's columns take, by position over the columns the
/// view's SQL knows (a column added under it since has none).
fn join_aliases(names: &[String], a: &ast::TableAlias) -> Vec<Option<String>> {
    let mut pos = 0;
    names
        .iter()
        .map(|n| {
            if n.starts_with(NEW_COL) {
                return None;
            }
            pos += 1;
            a.columns.get(pos - 1).map(|c| ident(&c.name))
        })
        .collect()
}

/// ` alias(a, b)` column list, when one was written.
fn alias_columns(a: &ast::TableAlias, o: &mut Out) {
    if !a.columns.is_empty() {
        let names: Vec<String> = a.columns.iter().map(|c| quote(&ident(&c.name))).collect();
        o.push(&format!("({})", names.join(", ")));
    }
}

/// PostgreSQL's FigureColname: the name a select-list expression gets.
fn figure_colname(e: &E) -> String {
    match unnest(e) {
        E::Identifier(i) => ident(i),
        E::CompoundIdentifier(ids) => ids.last().map(ident).unwrap_or_default(),
        E::Function(f) => object_name(&f.name).map(|x| x.1).unwrap_or_else(|_| "?column?".into()),
        E::Cast { expr, data_type, .. } => match unnest(expr) {
            E::Identifier(_) | E::CompoundIdentifier(_) | E::Function(_) => figure_colname(expr),
            _ => super::bind::sql_type(data_type).map(|t| t.to_string()).unwrap_or_else(|_| "?column?".into()),
        },
        E::Case { .. } => "case".into(),
        E::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

/// A SELECT's output columns: name, printed expression, sort-key class.
type Targets = Vec<(String, String, SortClass)>;

/// What get_rule_sortgroupclause tells apart.
#[derive(Clone, Copy, PartialEq, Debug)]
enum SortClass {
    Column,
    Call,
    Other,
}

fn sort_class(e: &E) -> SortClass {
    match unnest(e) {
        E::Identifier(_) | E::CompoundIdentifier(_) => SortClass::Column,
        E::Function(_) | E::Cast { .. } => SortClass::Call,
        _ => SortClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_are_made_unique_as_ruleutils_does() {
        let st = UsingState { unique: true, names: vec!["x".into()] };
        assert_eq!(make_colname_unique("x", &[], &st, &[]), "x_1");
        assert_eq!(make_colname_unique("x", &[Some("x_1".into())], &st, &[]), "x_2");
        assert_eq!(make_colname_unique("y", &[], &st, &["y".into()]), "y_1");
        assert_eq!(make_colname_unique("z", &[None], &st, &[]), "z");
        // NAMEDATALEN: the name gives way to the digits.
        let long = "a".repeat(63);
        let none = UsingState { unique: false, names: vec![] };
        assert_eq!(make_colname_unique(&long, &[Some(long.clone())], &none, &[]), format!("{}_1", "a".repeat(61)));
    }

    #[test]
    fn join_aliases_skip_columns_added_since() {
        // (t5 CROSS JOIN t6) j(aa, bb, cc, dd) after t5 gained c: the alias
        // names stay on the columns the view knew, a dropped one keeps its place.
        let a = ast::TableAlias {
            explicit: false,
            name: ast::Ident::new("j"),
            columns: ["aa", "bb", "cc", "dd"].iter().map(|n| ast::TableAliasColumnDef::from_name(*n)).collect(),
            at: None,
        };
        let names: Vec<String> = ["a", "b", &format!("{NEW_COL}c"), "c", "d"].iter().map(|n| n.to_string()).collect();
        let got = join_aliases(&names, &a);
        assert_eq!(got, vec![Some("aa".into()), Some("bb".into()), None, Some("cc".into()), Some("dd".into())]);
        let names: Vec<String> = ["a", &format!("{DROPPED_COL}b"), "c", "d"].iter().map(|n| n.to_string()).collect();
        assert_eq!(join_aliases(&names, &a)[2], Some("cc".into()));
        assert!(!is_known(&names[1]) && is_dropped(&names[1]) && is_known("a"));
    }

    #[test]
    fn merged_columns_are_the_input_needing_no_cast() {
        let t = Ty::Sql;
        assert_eq!(merged_input(JoinKind::Inner, t(SqlType::Int4), t(SqlType::Numeric)), (Ty::Numeric, Some(false)));
        assert_eq!(merged_input(JoinKind::Inner, t(SqlType::Int4), t(SqlType::Int2)), (t(SqlType::Int4), Some(true)));
        assert_eq!(merged_input(JoinKind::Left, t(SqlType::Int2), t(SqlType::Int4)).1, None);
        assert_eq!(merged_input(JoinKind::Full, t(SqlType::Int4), t(SqlType::Int4)).1, None);
    }

    #[test]
    fn keywords_start_lines_at_the_context_indent() {
        // " SELECT a," then the FROM clause: ruleutils' layout of a top-level SELECT.
        let mut o = Out { buf: String::new(), indent: 0 };
        o.indent += INDENT_STD;
        o.push(" SELECT t.a, ");
        o.keyword("", -INDENT_STD, INDENT_STD, INDENT_VAR);
        o.push("t.b");
        o.keyword(" FROM ", -INDENT_STD, INDENT_STD, 2);
        o.push("t");
        o.keyword(" WHERE ", -INDENT_STD, INDENT_STD, 1);
        o.push("t.a > 1");
        assert_eq!(o.buf, " SELECT t.a,\n    t.b\n   FROM t\n  WHERE t.a > 1");
        assert_eq!(o.indent, INDENT_STD);
    }

    #[test]
    fn pretty_parentheses_follow_operator_priority() {
        // (a + b) * c keeps its parentheses, a + b * c needs none, a - (b - c) keeps them.
        assert!(!is_simple(Kind::Op("+"), Parent::Op("*", true)));
        assert!(is_simple(Kind::Op("*"), Parent::Op("+", false)));
        assert!(is_simple(Kind::Op("-"), Parent::Op("-", true)));
        assert!(!is_simple(Kind::Op("-"), Parent::Op("-", false)));
        // a > 1 AND (b > 2 OR c > 3)
        assert!(is_simple(Kind::Op(">"), Parent::And));
        assert!(!is_simple(Kind::Or, Parent::And));
        assert!(is_simple(Kind::And, Parent::Or));
        // NOT a > 1; (a + 1)::text
        assert!(is_simple(Kind::Op(">"), Parent::Not));
        assert!(!is_simple(Kind::Op("+"), Parent::Cast));
    }

    #[test]
    fn operands_get_the_casts_postgresql_adds() {
        let t = Ty::Sql;
        // float8 > 1: the integer is cast; int8 = int4 has its own operator.
        assert_eq!(operand_casts(">", t(SqlType::Float8), t(SqlType::Int4)), (None, Some(t(SqlType::Float8))));
        assert_eq!(operand_casts("=", t(SqlType::Int8), t(SqlType::Int4)), (None, None));
        // int4 > 1.5 compares as numeric; an untyped literal takes the column's type.
        assert_eq!(operand_casts(">", t(SqlType::Int4), Ty::Numeric), (Some(Ty::Numeric), None));
        assert_eq!(operand_casts("=", t(SqlType::Text), Ty::Unknown), (None, Some(t(SqlType::Text))));
        // varchar = 'y' is text = text.
        assert_eq!(operand_casts("=", t(SqlType::Varchar), Ty::Unknown), (Some(t(SqlType::Text)), Some(t(SqlType::Text))));
        assert_eq!(common(t(SqlType::Int2), t(SqlType::Int4)), t(SqlType::Int4));
        assert_eq!(common(t(SqlType::Date), t(SqlType::TimestampTz)), t(SqlType::TimestampTz));
    }

    #[test]
    fn names_are_quoted_as_quote_identifier_does() {
        assert_eq!(quote("a_1"), "a_1");
        assert_eq!(quote("case"), "\"case\"");
        assert_eq!(quote("?column?"), "\"?column?\"");
        assert_eq!(quote("Mixed"), "\"Mixed\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(number_type("5000000000"), Ty::Sql(SqlType::Int8));
    }
}
