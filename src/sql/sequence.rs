//! Sequences: CREATE / ALTER / DROP SEQUENCE, the sequences behind SERIAL
//! and identity columns, and the session's side of nextval, currval,
//! setval and lastval (`SessionSequences`, the executor's
//! `SequenceAccess`). Definitions and values are the catalog's
//! (`catalog/sequence.rs`, which also says how values are made durable);
//! currval and lastval are per session, as in PostgreSQL.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast::{self, SequenceOptions};

use super::{Engine, QueryResult, Session};
use crate::catalog::{Identity, OwnedBy, SequenceDef, SequenceValue};
use crate::error::Result;
use crate::planner::{ident, relation};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// A session's sequences: the catalog's, plus the last value nextval gave
/// this session for each (currval) and overall (lastval).
pub struct SessionSequences {
    engine: Arc<Engine>,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    values: HashMap<(String, String), i64>,
    last: Option<(String, String)>,
}

impl std::fmt::Debug for SessionSequences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSequences")
    }
}

impl SessionSequences {
    pub fn new(engine: Arc<Engine>) -> SessionSequences {
        SessionSequences { engine, seen: Mutex::new(Seen::default()) }
    }

    /// The sequence a nextval argument names: its text (`'s'`, `'"S"'`,
    /// `'public.s'`, as regclass input reads it) or its OID.
    fn resolve(&self, database: &str, seq: &Value) -> Result<SequenceDef> {
        let cat = &self.engine.catalog;
        let (db, name) = match seq {
            Value::Int(oid) => {
                let found = cat.sequences(database).into_iter().find(|s| crate::planner::system::table_oid(s.id) == *oid);
                return found.ok_or_else(|| err!(UndefinedTable, "could not open relation with OID {oid}"));
            }
            Value::Text(text) => {
                let parts = crate::planner::split_dotted(text.trim());
                let name = ast::ObjectName::from(parts.into_iter().map(|p| ast::Ident::with_quote('"', p)).collect::<Vec<_>>());
                let rel = relation(cat, database, &name)?;
                let db = rel.database().map_err(|_| err!(UndefinedTable, "relation \"{}\" does not exist", rel.display()))?;
                (db, rel.name)
            }
            other => bail!(DatatypeMismatch, "cannot name a sequence with {}", crate::types::format_value(other)),
        };
        match cat.sequence(&db, &name) {
            Some(def) => Ok(def),
            None if cat.table(&db, &name).is_some() || cat.view(&db, &name).is_some() => {
                bail!(WrongObjectType, "\"{name}\" is not a sequence")
            }
            None => bail!(UndefinedTable, "relation \"{name}\" does not exist"),
        }
    }
}

impl crate::exec::SequenceAccess for SessionSequences {
    fn nextval(&self, database: &str, seq: &Value) -> Result<i64> {
        let def = self.resolve(database, seq)?;
        let v = self.engine.catalog.nextval(&def.database, &def.name)?;
        let key = (def.database, def.name);
        let mut seen = self.seen.lock();
        seen.values.insert(key.clone(), v);
        seen.last = Some(key);
        Ok(v)
    }

    fn currval(&self, database: &str, seq: &Value) -> Result<i64> {
        let def = self.resolve(database, seq)?;
        self.seen
            .lock()
            .values
            .get(&(def.database, def.name.clone()))
            .copied()
            .ok_or_else(|| err!(ObjectNotInPrerequisiteState, "currval of sequence \"{}\" is not yet defined in this session", def.name))
    }

    fn setval(&self, database: &str, seq: &Value, value: i64, is_called: bool) -> Result<i64> {
        let def = self.resolve(database, seq)?;
        if value < def.min || value > def.max {
            bail!(NumericOutOfRange, "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})", def.name, def.min, def.max);
        }
        self.engine.catalog.set_sequence_value(&def, SequenceValue { last_value: value, is_called })?;
        if is_called {
            self.seen.lock().values.insert((def.database, def.name), value);
        }
        Ok(value)
    }

    fn lastval(&self) -> Result<i64> {
        let seen = self.seen.lock();
        let Some(key) = &seen.last else {
            bail!(ObjectNotInPrerequisiteState, "lastval is not yet defined in this session");
        };
        if self.engine.catalog.sequence(&key.0, &key.1).is_none() {
            bail!(ObjectNotInPrerequisiteState, "lastval is not yet defined in this session");
        }
        Ok(seen.values.get(key).copied().unwrap_or_default())
    }
}

/// The options of CREATE / ALTER SEQUENCE and of an identity column, as written.
#[derive(Default)]
struct Options {
    ty: Option<SqlType>,
    increment: Option<i64>,
    /// Some(None): NO MINVALUE (the default again).
    min: Option<Option<i64>>,
    max: Option<Option<i64>>,
    start: Option<i64>,
    cache: Option<i64>,
    cycle: Option<bool>,
    /// Some(None): OWNED BY NONE.
    owned_by: Option<Option<ast::ObjectName>>,
}

fn number(e: &ast::Expr) -> Result<i64> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => {
                n.parse::<i64>().map_err(|_| err!(NumericOutOfRange, "value \"{n}\" is out of range for type bigint"))
            }
            other => bail!(Syntax, "syntax error at or near \"{other}\""),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            number(expr)?.checked_neg().ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))
        }
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } => number(expr),
        other => bail!(Syntax, "syntax error at or near \"{other}\""),
    }
}

fn options(list: &[SequenceOptions]) -> Result<Options> {
    let mut o = Options::default();
    for opt in list {
        match opt {
            SequenceOptions::DataType(dt) => {
                let ty = crate::planner::sql_type(dt)?;
                if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
                    bail!(InvalidParameterValue, "sequence type must be smallint, integer, or bigint");
                }
                o.ty = Some(ty);
            }
            SequenceOptions::IncrementBy(e, _) => o.increment = Some(number(e)?),
            SequenceOptions::MinValue(e) => o.min = Some(e.as_ref().map(number).transpose()?),
            SequenceOptions::MaxValue(e) => o.max = Some(e.as_ref().map(number).transpose()?),
            SequenceOptions::StartWith(e, _) => o.start = Some(number(e)?),
            SequenceOptions::Cache(e) => o.cache = Some(number(e)?),
            // sqlparser's flag says NO.
            SequenceOptions::Cycle(no) => o.cycle = Some(!no),
            SequenceOptions::OwnedBy(n) => o.owned_by = Some(n.clone()),
        }
    }
    Ok(o)
}

fn type_range(ty: SqlType) -> (i64, i64) {
    match ty {
        SqlType::Int2 => (i16::MIN as i64, i16::MAX as i64),
        SqlType::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

/// A definition from options over `base` (ALTER) or PostgreSQL's defaults
/// (CREATE), with PostgreSQL's checks.
fn definition(database: &str, name: &str, base: Option<&SequenceDef>, o: &Options) -> Result<SequenceDef> {
    let ty = o.ty.or(base.map(|b| b.ty)).unwrap_or(SqlType::Int8);
    let (tmin, tmax) = type_range(ty);
    let increment = o.increment.or(base.map(|b| b.increment)).unwrap_or(1);
    if increment == 0 {
        bail!(InvalidParameterValue, "INCREMENT must not be zero");
    }
    // A bound at its old type's limit follows a new type (as PostgreSQL).
    let old_range = base.map(|b| type_range(b.ty));
    let max = match o.max {
        Some(Some(v)) => v,
        Some(None) => {
            if increment > 0 {
                tmax
            } else {
                -1
            }
        }
        None => match base {
            Some(b) if old_range.is_some_and(|r| r.1 == b.max) => tmax,
            Some(b) => b.max,
            None if increment > 0 => tmax,
            None => -1,
        },
    };
    let min = match o.min {
        Some(Some(v)) => v,
        Some(None) => {
            if increment > 0 {
                1
            } else {
                tmin
            }
        }
        None => match base {
            Some(b) if old_range.is_some_and(|r| r.0 == b.min) => tmin,
            Some(b) => b.min,
            None if increment > 0 => 1,
            None => tmin,
        },
    };
    let tname = crate::catalog::sequence::integer_type_name(ty);
    if max < tmin || max > tmax {
        bail!(InvalidParameterValue, "MAXVALUE ({max}) is out of range for sequence data type {tname}");
    }
    if min < tmin || min > tmax {
        bail!(InvalidParameterValue, "MINVALUE ({min}) is out of range for sequence data type {tname}");
    }
    if min >= max {
        bail!(InvalidParameterValue, "MINVALUE ({min}) must be less than MAXVALUE ({max})");
    }
    let start = o.start.or(base.map(|b| b.start)).unwrap_or(if increment > 0 { min } else { max });
    if start < min {
        bail!(InvalidParameterValue, "START value ({start}) cannot be less than MINVALUE ({min})");
    }
    if start > max {
        bail!(InvalidParameterValue, "START value ({start}) cannot be greater than MAXVALUE ({max})");
    }
    let cache = o.cache.or(base.map(|b| b.cache)).unwrap_or(1);
    if cache <= 0 {
        bail!(InvalidParameterValue, "CACHE ({cache}) must be greater than zero");
    }
    Ok(SequenceDef {
        database: database.to_string(),
        name: name.to_string(),
        id: base.map(|b| b.id).unwrap_or(0),
        ty,
        increment,
        min,
        max,
        start,
        cache,
        cycle: o.cycle.or(base.map(|b| b.cycle)).unwrap_or(false),
        owned_by: base.and_then(|b| b.owned_by.clone()),
        identity: base.and_then(|b| b.identity),
    })
}

/// `OWNED BY t.c`: the table must be in the sequence's database and have the column.
fn owner(s: &Session, database: &str, n: &ast::ObjectName) -> Result<OwnedBy> {
    if n.0.len() < 2 {
        return Err(err!(InvalidParameterValue, "invalid OWNED BY option").with_hint("Specify OWNED BY table.column or OWNED BY NONE."));
    }
    let column = match &n.0[n.0.len() - 1] {
        ast::ObjectNamePart::Identifier(i) => ident(i),
        _ => bail!(Syntax, "invalid OWNED BY option"),
    };
    let table_name = ast::ObjectName(n.0[..n.0.len() - 1].to_vec());
    let rel = relation(&s.engine.catalog, &s.database, &table_name)?;
    let db = rel.database()?;
    let Some(t) = s.engine.catalog.table(&db, &rel.name) else {
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
    };
    if db != database {
        bail!(ObjectNotInPrerequisiteState, "sequence must be in same schema as table it is linked to");
    }
    if t.column_index(&column).is_none() {
        bail!(UndefinedColumn, "column \"{column}\" of relation \"{}\" does not exist", t.name);
    }
    Ok(OwnedBy { table: t.name, column })
}

/// `CREATE SEQUENCE`.
pub fn create(
    s: &mut Session,
    if_not_exists: bool,
    temporary: bool,
    name: &ast::ObjectName,
    list: &[SequenceOptions],
) -> Result<QueryResult> {
    if temporary {
        bail!(FeatureNotSupported, "temporary sequences are not supported");
    }
    let cat = &s.engine.catalog;
    let rel = relation(cat, &s.database, name)?;
    let db = rel.database()?;
    let exists = cat.sequence(&db, &rel.name).is_some() || cat.table(&db, &rel.name).is_some() || cat.view(&db, &rel.name).is_some();
    if exists && if_not_exists {
        return Ok(QueryResult::Command("CREATE SEQUENCE".into()));
    }
    let o = options(list)?;
    let mut def = definition(&db, &rel.name, None, &o)?;
    if let Some(Some(n)) = &o.owned_by {
        def.owned_by = Some(owner(s, &db, n)?);
    }
    s.engine.catalog.create_sequence(def)?;
    Ok(QueryResult::Command("CREATE SEQUENCE".into()))
}

/// `ALTER SEQUENCE`.
pub fn alter(s: &mut Session, a: &crate::parser::AlterSequence) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    let rel = relation(cat, &s.database, &a.name)?;
    let db = rel.database()?;
    let Some(base) = cat.sequence(&db, &rel.name) else {
        if a.if_exists {
            return Ok(QueryResult::Command("ALTER SEQUENCE".into()));
        }
        if cat.table(&db, &rel.name).is_some() || cat.view(&db, &rel.name).is_some() {
            bail!(WrongObjectType, "\"{}\" is not a sequence", rel.name);
        }
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
    };
    let o = options(&a.options)?;
    let mut def = definition(&db, &rel.name, Some(&base), &o)?;
    match &o.owned_by {
        Some(Some(n)) => def.owned_by = Some(owner(s, &db, n)?),
        Some(None) => def.owned_by = None,
        None => {}
    }
    let restart = match &a.restart {
        Some(Some(e)) => Some(number(e)?),
        Some(None) => Some(def.start),
        None => None,
    };
    if let Some(r) = restart {
        if r < def.min {
            bail!(InvalidParameterValue, "RESTART value ({r}) cannot be less than MINVALUE ({})", def.min);
        }
        if r > def.max {
            bail!(InvalidParameterValue, "RESTART value ({r}) cannot be greater than MAXVALUE ({})", def.max);
        }
    }
    let cat = &s.engine.catalog;
    cat.replace_sequence(def.clone())?;
    if let Some(r) = restart {
        cat.set_sequence_value(&def, SequenceValue { last_value: r, is_called: false })?;
    }
    Ok(QueryResult::Command("ALTER SEQUENCE".into()))
}

/// `DROP SEQUENCE`: 2BP01 while a column's default uses it, unless CASCADE
/// (which drops those defaults).
pub fn drop_sequences(s: &mut Session, if_exists: bool, cascade: bool, names: &[ast::ObjectName]) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    for n in names {
        let rel = relation(cat, &s.database, n)?;
        let db = match rel.database() {
            Err(_) if if_exists => continue,
            r => r?,
        };
        let Some(def) = cat.sequence(&db, &rel.name) else {
            if if_exists {
                continue;
            }
            if cat.table(&db, &rel.name).is_some() || cat.view(&db, &rel.name).is_some() {
                return Err(err!(WrongObjectType, "\"{}\" is not a sequence", rel.name).with_hint("Use DROP TABLE to remove a table."));
            }
            bail!(UndefinedTable, "sequence \"{}\" does not exist", rel.display());
        };
        let users: Vec<(crate::catalog::TableDef, usize)> = cat
            .tables(&db)
            .into_iter()
            .flat_map(|t| {
                let cols: Vec<usize> = (0..t.columns.len())
                    .filter(|&i| t.columns[i].default.as_deref().and_then(default_sequence).is_some_and(|n| n == def.name))
                    .collect();
                cols.into_iter().map(move |i| (t.clone(), i))
            })
            .collect();
        if let Some((t, i)) = users.first().filter(|_| !cascade) {
            return Err(err!(DependentObjectsStillExist, "cannot drop sequence {} because other objects depend on it", def.name)
                .with_detail(format!(
                    "default value for column {} of table {} depends on sequence {}",
                    t.columns[*i].name, t.name, def.name
                ))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        for (t, i) in users {
            let mut t = cat.table(&t.database, &t.name).unwrap_or(t);
            t.columns[i].default = None;
            cat.replace_table(t)?;
        }
        cat.drop_sequence(&db, &def.name)?;
    }
    Ok(QueryResult::Command("DROP SEQUENCE".into()))
}

/// The sequence a column default draws from (`nextval('s'::regclass)`,
/// `nextval('s')`), by its name as written.
pub fn default_sequence(default: &str) -> Option<String> {
    let e = crate::parser::parse_expr(default).ok()?;
    let ast::Expr::Function(f) = e else { return None };
    if !f.name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("nextval")) {
        return None;
    }
    let ast::FunctionArguments::List(l) = &f.args else { return None };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = l.args.as_slice() else { return None };
    let arg = match arg {
        ast::Expr::Cast { expr, .. } => expr.as_ref(),
        other => other,
    };
    match arg {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => crate::planner::split_dotted(s).pop(),
            _ => None,
        },
        _ => None,
    }
}

/// A SERIAL column's integer type (`serial`, `bigserial`, `smallserial`
/// and their `serial4` / `serial8` / `serial2` names).
fn serial_type(dt: &ast::DataType) -> Option<SqlType> {
    let ast::DataType::Custom(name, _) = dt else { return None };
    let [ast::ObjectNamePart::Identifier(i)] = name.0.as_slice() else { return None };
    if i.quote_style.is_some() {
        return None;
    }
    match i.value.to_ascii_lowercase().as_str() {
        "serial" | "serial4" => Some(SqlType::Int4),
        "bigserial" | "serial8" => Some(SqlType::Int8),
        "smallserial" | "serial2" => Some(SqlType::Int2),
        _ => None,
    }
}

/// What a column's sequence is: SERIAL, or an identity column with its options.
pub(super) struct ColumnSequence {
    pub column: String,
    pub ty: SqlType,
    pub identity: Option<Identity>,
    options: Vec<SequenceOptions>,
}

/// The column's type, when SERIAL stands for one (sql_type does not know SERIAL).
pub(super) fn column_type(c: &ast::ColumnDef) -> Option<SqlType> {
    serial_type(&c.data_type)
}

/// Whether a column is SERIAL or an identity column, and its sequence's shape.
pub(super) fn column_sequence(c: &ast::ColumnDef) -> Result<Option<ColumnSequence>> {
    let column = ident(&c.name);
    let identity = c.options.iter().find_map(|o| match &o.option {
        ast::ColumnOption::Generated { generated_as, sequence_options, generation_expr: None, .. } => match generated_as {
            ast::GeneratedAs::Always => Some((Identity::Always, sequence_options.clone().unwrap_or_default())),
            ast::GeneratedAs::ByDefault => Some((Identity::ByDefault, sequence_options.clone().unwrap_or_default())),
            ast::GeneratedAs::ExpStored => None,
        },
        _ => None,
    });
    if let Some(ty) = serial_type(&c.data_type) {
        if identity.is_some() {
            bail!(Syntax, "both default and identity specified for column \"{column}\"");
        }
        return Ok(Some(ColumnSequence { column, ty, identity: None, options: vec![] }));
    }
    let Some((kind, options)) = identity else { return Ok(None) };
    let ty = crate::planner::sql_type(&c.data_type)?;
    if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
        bail!(InvalidParameterValue, "identity column type must be smallint, integer, or bigint");
    }
    if c.options.iter().any(|o| matches!(o.option, ast::ColumnOption::Default(_))) {
        bail!(Syntax, "both default and identity specified for column \"{column}\"");
    }
    Ok(Some(ColumnSequence { column, ty, identity: Some(kind), options }))
}

/// A free name for a table column's sequence: `t_c_seq`, else `t_c_seq1`, ….
fn sequence_name(s: &Session, database: &str, table: &str, column: &str) -> String {
    let cat = &s.engine.catalog;
    let base = format!("{table}_{column}_seq");
    let taken = |n: &str| cat.sequence(database, n).is_some() || cat.table(database, n).is_some() || cat.view(database, n).is_some();
    let mut name = base.clone();
    let mut k = 0;
    while taken(&name) {
        k += 1;
        name = format!("{base}{k}");
    }
    name
}

/// The DEFAULT of a column drawing from a sequence, as PostgreSQL writes it.
fn nextval_default(seq: &str) -> String {
    format!("nextval('{}'::regclass)", crate::planner::system::quote_ident(seq).replace('\'', "''"))
}

/// Name the sequences of a new table's SERIAL and identity columns and set
/// those columns' defaults (NOT NULL, as PostgreSQL). Returns the
/// sequences to create once the table exists.
pub(super) fn plan_column_sequences(
    s: &Session,
    database: &str,
    table: &str,
    columns: &mut [crate::catalog::ColumnDef],
    specs: Vec<ColumnSequence>,
) -> Result<Vec<SequenceDef>> {
    let mut out: Vec<SequenceDef> = Vec::new();
    for spec in specs {
        let mut name = sequence_name(s, database, table, &spec.column);
        while out.iter().any(|d| d.name == name) {
            name.push('1');
        }
        let mut o = options(&spec.options)?;
        o.ty = o.ty.or(Some(spec.ty));
        let mut def = definition(database, &name, None, &o)?;
        def.owned_by = Some(OwnedBy { table: table.to_string(), column: spec.column.clone() });
        def.identity = spec.identity;
        if let Some(c) = columns.iter_mut().find(|c| c.name == spec.column) {
            c.ty = spec.ty;
            c.default = Some(nextval_default(&name));
            c.nullable = false;
        }
        out.push(def);
    }
    Ok(out)
}

/// INSERT: 428C9 for a value given for a GENERATED ALWAYS identity column
/// (unless OVERRIDING SYSTEM VALUE). `explicit` are the target columns
/// given a value other than DEFAULT.
pub(super) fn check_identity_insert(
    cat: &crate::catalog::Catalog,
    def: &crate::catalog::TableDef,
    explicit: &[usize],
    overriding: bool,
) -> Result<()> {
    if overriding {
        return Ok(());
    }
    for seq in cat.owned_sequences(&def.database, &def.name) {
        let (Some(Identity::Always), Some(o)) = (seq.identity, &seq.owned_by) else { continue };
        if let Some(&i) = explicit.iter().find(|&&i| def.columns[i].name == o.column) {
            let col = &def.columns[i].name;
            return Err(err!(GeneratedAlways, "cannot insert a non-DEFAULT value into column \"{col}\"")
                .with_detail(format!("Column \"{col}\" is an identity column defined as GENERATED ALWAYS."))
                .with_hint("Use OVERRIDING SYSTEM VALUE to override."));
        }
    }
    Ok(())
}

/// UPDATE: 428C9 for a GENERATED ALWAYS identity column set to anything but DEFAULT.
pub(super) fn check_identity_update(cat: &crate::catalog::Catalog, def: &crate::catalog::TableDef, column: &str) -> Result<()> {
    let always = cat
        .owned_sequences(&def.database, &def.name)
        .into_iter()
        .any(|seq| seq.identity == Some(Identity::Always) && seq.owned_by.as_ref().is_some_and(|o| o.column == column));
    if always {
        return Err(err!(GeneratedAlways, "column \"{column}\" can only be updated to DEFAULT")
            .with_detail(format!("Column \"{column}\" is an identity column defined as GENERATED ALWAYS.")));
    }
    Ok(())
}
