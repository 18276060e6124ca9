//! TDengine's statements (3.3.7 grammar): supertables and their child
//! tables (`CREATE STABLE … TAGS`, `CREATE TABLE ct USING st TAGS`,
//! `INSERT INTO ct USING st TAGS … VALUES`, `DROP STABLE`, `SHOW STABLES`),
//! snodes and dnodes (`CREATE | DROP SNODE ON DNODE n`, `SHOW SNODES`,
//! `SHOW DNODES`) and streams (`CREATE STREAM` with every trigger,
//! `DROP | STOP | START STREAM`, `SHOW STREAMS`, `SHOW CREATE STREAM`,
//! `RECALCULATE STREAM`). Parsed with sqlparser's token API; the stream's
//! query is sqlparser's `Query`, with TDengine's `%%name` placeholders
//! turned into quoted identifiers (`"%%trows"`) by `placeholder_tokens`
//! before parsing.
//!
//! May import `error` only (through `parser`).

use std::fmt;

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

use super::{parse_words, peek_words, peek_words_at, Statement};

/// A TDengine statement.
#[derive(Debug, Clone, PartialEq)]
pub enum TdStatement {
    CreateStable(CreateStable),
    /// `CREATE TABLE [IF NOT EXISTS] ct USING st [(tag names)] TAGS (…) [ct2 USING …]`.
    CreateChildTables(Vec<ChildSpec>),
    DropStable {
        if_exists: bool,
        name: ast::ObjectName,
    },
    ShowStables {
        database: Option<ast::Ident>,
        like: Option<String>,
    },
    /// `INSERT INTO ct USING st TAGS (…) [(cols)] VALUES (…)… [ct2 …]`.
    InsertUsing(Vec<InsertPart>),
    CreateSnode {
        dnode: i64,
    },
    DropSnode {
        dnode: i64,
    },
    ShowSnodes,
    ShowDnodes,
    CreateStream(Box<CreateStream>),
    DropStream {
        if_exists: bool,
        names: Vec<ast::ObjectName>,
    },
    ShowStreams {
        database: Option<ast::Ident>,
        like: Option<String>,
    },
    ShowCreateStream {
        name: ast::ObjectName,
    },
    StopStream {
        if_exists: bool,
        name: ast::ObjectName,
    },
    StartStream {
        if_exists: bool,
        ignore_untreated: bool,
        name: ast::ObjectName,
    },
    Recalculate {
        name: ast::ObjectName,
        from: ast::Expr,
        to: Option<ast::Expr>,
    },
    /// `DROP DATABASE [IF EXISTS] db FORCE`: also drops the streams that
    /// use the database (without FORCE it is PostgreSQL's statement).
    DropDatabaseForce {
        if_exists: bool,
        name: ast::Ident,
    },
}

/// `CREATE STABLE [IF NOT EXISTS] st (cols) TAGS (tags)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateStable {
    pub if_not_exists: bool,
    pub name: ast::ObjectName,
    pub columns: Vec<ast::ColumnDef>,
    pub tags: Vec<ast::ColumnDef>,
}

/// One child table of `CREATE TABLE … USING` (or of an auto-creating INSERT).
#[derive(Debug, Clone, PartialEq)]
pub struct ChildSpec {
    pub if_not_exists: bool,
    pub name: ast::ObjectName,
    pub stable: ast::ObjectName,
    /// The tags named before TAGS (all of them, in order, when empty).
    pub tag_names: Vec<ast::Ident>,
    pub tags: Vec<ast::Expr>,
}

/// One table's rows of a TDengine INSERT.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertPart {
    pub table: ast::ObjectName,
    pub using: Option<ChildSpec>,
    pub columns: Vec<ast::Ident>,
    pub rows: Vec<Vec<ast::Expr>>,
}

/// A TDengine duration literal (`10s`, `1m`, `5h30m`, `100a`).
#[derive(Debug, Clone, PartialEq)]
pub struct Duration {
    /// As written.
    pub text: String,
    /// Microseconds; None for calendar units (n, y).
    pub micros: Option<i64>,
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.text)
    }
}

/// A stream's trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamTrigger {
    Period { period: Duration, offset: Option<Duration> },
    Sliding { sliding: Duration, offset: Option<Duration> },
    Interval { interval: Duration, offset: Option<Duration>, sliding: Duration, sliding_offset: Option<Duration> },
    Session { column: ast::Ident, gap: Duration },
    State { expr: ast::Expr, extend: Option<i64>, true_for: Option<Duration> },
    Event { start: ast::Expr, end: ast::Expr, true_for: Option<Duration> },
    Count { count: i64, slide: Option<i64>, columns: Vec<ast::Ident> },
}

impl StreamTrigger {
    /// TDengine's name of the trigger kind.
    pub fn kind(&self) -> &'static str {
        match self {
            StreamTrigger::Period { .. } => "PERIOD",
            StreamTrigger::Sliding { .. } => "SLIDING",
            StreamTrigger::Interval { .. } => "INTERVAL",
            StreamTrigger::Session { .. } => "SESSION",
            StreamTrigger::State { .. } => "STATE_WINDOW",
            StreamTrigger::Event { .. } => "EVENT_WINDOW",
            StreamTrigger::Count { .. } => "COUNT_WINDOW",
        }
    }
}

fn opt_dur(d: &Option<Duration>) -> String {
    d.as_ref().map(|d| format!(", {d}")).unwrap_or_default()
}

impl fmt::Display for StreamTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamTrigger::Period { period, offset } => write!(f, "PERIOD({period}{})", opt_dur(offset)),
            StreamTrigger::Sliding { sliding, offset } => write!(f, "SLIDING({sliding}{})", opt_dur(offset)),
            StreamTrigger::Interval { interval, offset, sliding, sliding_offset } => {
                write!(f, "INTERVAL({interval}{}) SLIDING({sliding}{})", opt_dur(offset), opt_dur(sliding_offset))
            }
            StreamTrigger::Session { column, gap } => write!(f, "SESSION({column}, {gap})"),
            StreamTrigger::State { expr, extend, true_for } => {
                write!(f, "STATE_WINDOW({expr}{})", extend.map(|e| format!(", {e}")).unwrap_or_default())?;
                if let Some(t) = true_for {
                    write!(f, " TRUE_FOR({t})")?;
                }
                Ok(())
            }
            StreamTrigger::Event { start, end, true_for } => {
                write!(f, "EVENT_WINDOW(START WITH {start} END WITH {end})")?;
                if let Some(t) = true_for {
                    write!(f, " TRUE_FOR({t})")?;
                }
                Ok(())
            }
            StreamTrigger::Count { count, slide, columns } => {
                write!(f, "COUNT_WINDOW({count}")?;
                if let Some(s) = slide {
                    write!(f, ", {s}")?;
                }
                for c in columns {
                    write!(f, ", {c}")?;
                }
                write!(f, ")")
            }
        }
    }
}

/// One of `STREAM_OPTIONS(…)`.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamOption {
    Watermark(Duration),
    ExpiredTime(Duration),
    IgnoreDisorder,
    DeleteRecalc,
    DeleteOutputTable,
    FillHistory(Option<ast::Expr>),
    FillHistoryFirst(Option<ast::Expr>),
    CalcNotifyOnly,
    LowLatencyCalc,
    PreFilter(ast::Expr),
    ForceOutput,
    MaxDelay(Duration),
    EventType(Vec<String>),
    IgnoreNodataTrigger,
    /// TDengine 3.4's IDLE_TIMEOUT(d): a group without data for `d` of
    /// processing time is idle (EVENT_TYPE / NOTIFY ON IDLE, RESUME).
    IdleTimeout(Duration),
}

impl StreamOption {
    /// The option's keyword (each may appear once).
    pub fn name(&self) -> &'static str {
        match self {
            StreamOption::Watermark(_) => "WATERMARK",
            StreamOption::ExpiredTime(_) => "EXPIRED_TIME",
            StreamOption::IgnoreDisorder => "IGNORE_DISORDER",
            StreamOption::DeleteRecalc => "DELETE_RECALC",
            StreamOption::DeleteOutputTable => "DELETE_OUTPUT_TABLE",
            StreamOption::FillHistory(_) => "FILL_HISTORY",
            StreamOption::FillHistoryFirst(_) => "FILL_HISTORY_FIRST",
            StreamOption::CalcNotifyOnly => "CALC_NOTIFY_ONLY",
            StreamOption::LowLatencyCalc => "LOW_LATENCY_CALC",
            StreamOption::PreFilter(_) => "PRE_FILTER",
            StreamOption::ForceOutput => "FORCE_OUTPUT",
            StreamOption::MaxDelay(_) => "MAX_DELAY",
            StreamOption::EventType(_) => "EVENT_TYPE",
            StreamOption::IgnoreNodataTrigger => "IGNORE_NODATA_TRIGGER",
            StreamOption::IdleTimeout(_) => "IDLE_TIMEOUT",
        }
    }
}

impl fmt::Display for StreamOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.name();
        match self {
            StreamOption::Watermark(d) | StreamOption::ExpiredTime(d) | StreamOption::MaxDelay(d) | StreamOption::IdleTimeout(d) => {
                write!(f, "{n}({d})")
            }
            StreamOption::FillHistory(Some(e)) | StreamOption::FillHistoryFirst(Some(e)) | StreamOption::PreFilter(e) => {
                write!(f, "{n}({e})")
            }
            StreamOption::EventType(t) => write!(f, "{n}({})", t.join("|")),
            _ => write!(f, "{n}"),
        }
    }
}

/// `NOTIFY(urls) [ON (events)] [WHERE cond] [NOTIFY_OPTIONS(…)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notify {
    pub urls: Vec<String>,
    pub events: Vec<String>,
    pub condition: Option<ast::Expr>,
    pub options: Vec<String>,
}

/// An output tag: `name type AS expr`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTag {
    pub name: ast::Ident,
    pub data_type: ast::DataType,
    pub expr: ast::Expr,
}

/// `CREATE STREAM`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateStream {
    pub if_not_exists: bool,
    pub name: ast::ObjectName,
    pub trigger: StreamTrigger,
    pub from: Option<ast::ObjectName>,
    pub partition: Vec<ast::Ident>,
    pub options: Vec<StreamOption>,
    pub notify: Option<Notify>,
    pub into: Option<ast::ObjectName>,
    pub output_subtable: Option<ast::Expr>,
    pub columns: Vec<ast::Ident>,
    pub tags: Vec<OutputTag>,
    pub query: Option<Box<ast::Query>>,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn idents(v: &[ast::Ident]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

fn exprs(v: &[ast::Expr]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

fn cols(v: &[ast::ColumnDef]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for CreateStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE STREAM {}{} {}", if self.if_not_exists { "IF NOT EXISTS " } else { "" }, self.name, self.trigger)?;
        if let Some(t) = &self.from {
            write!(f, " FROM {t}")?;
        }
        if !self.partition.is_empty() {
            write!(f, " PARTITION BY {}", idents(&self.partition))?;
        }
        if !self.options.is_empty() {
            let o: Vec<String> = self.options.iter().map(|o| o.to_string()).collect();
            write!(f, " STREAM_OPTIONS({})", o.join("|"))?;
        }
        if let Some(n) = &self.notify {
            let u: Vec<String> = n.urls.iter().map(|u| quote(u)).collect();
            write!(f, " NOTIFY({})", u.join(", "))?;
            if !n.events.is_empty() {
                write!(f, " ON ({})", n.events.join("|"))?;
            }
            if let Some(c) = &n.condition {
                write!(f, " WHERE {c}")?;
            }
            if !n.options.is_empty() {
                write!(f, " NOTIFY_OPTIONS({})", n.options.join("|"))?;
            }
        }
        if let Some(t) = &self.into {
            write!(f, " INTO {t}")?;
        }
        if let Some(e) = &self.output_subtable {
            write!(f, " OUTPUT_SUBTABLE({e})")?;
        }
        if !self.columns.is_empty() {
            write!(f, " ({})", idents(&self.columns))?;
        }
        if !self.tags.is_empty() {
            let t: Vec<String> = self.tags.iter().map(|t| format!("{} {} AS {}", t.name, t.data_type, t.expr)).collect();
            write!(f, " TAGS ({})", t.join(", "))?;
        }
        if let Some(q) = &self.query {
            write!(f, " AS {q}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{} USING {}", if self.if_not_exists { "IF NOT EXISTS " } else { "" }, self.name, self.stable)?;
        if !self.tag_names.is_empty() {
            write!(f, " ({})", idents(&self.tag_names))?;
        }
        write!(f, " TAGS ({})", exprs(&self.tags))
    }
}

impl fmt::Display for TdStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let like = |l: &Option<String>| l.as_ref().map(|l| format!(" LIKE {}", quote(l))).unwrap_or_default();
        match self {
            TdStatement::CreateStable(c) => write!(
                f,
                "CREATE STABLE {}{} ({}) TAGS ({})",
                if c.if_not_exists { "IF NOT EXISTS " } else { "" },
                c.name,
                cols(&c.columns),
                cols(&c.tags)
            ),
            TdStatement::CreateChildTables(v) => {
                write!(f, "CREATE TABLE")?;
                for c in v {
                    write!(f, " {c}")?;
                }
                Ok(())
            }
            TdStatement::DropStable { if_exists, name } => write!(f, "DROP STABLE {}{name}", if *if_exists { "IF EXISTS " } else { "" }),
            TdStatement::ShowStables { database, like: l } => {
                write!(f, "SHOW {}STABLES{}", database.as_ref().map(|d| format!("{d}.")).unwrap_or_default(), like(l))
            }
            TdStatement::InsertUsing(parts) => {
                write!(f, "INSERT INTO")?;
                for p in parts {
                    match &p.using {
                        Some(u) => write!(f, " {u}")?,
                        None => write!(f, " {}", p.table)?,
                    }
                    if !p.columns.is_empty() {
                        write!(f, " ({})", idents(&p.columns))?;
                    }
                    let rows: Vec<String> = p.rows.iter().map(|r| format!("({})", exprs(r))).collect();
                    write!(f, " VALUES {}", rows.join(", "))?;
                }
                Ok(())
            }
            TdStatement::DropDatabaseForce { if_exists, name } => {
                write!(f, "DROP DATABASE {}{name} FORCE", if *if_exists { "IF EXISTS " } else { "" })
            }
            TdStatement::CreateSnode { dnode } => write!(f, "CREATE SNODE ON DNODE {dnode}"),
            TdStatement::DropSnode { dnode } => write!(f, "DROP SNODE ON DNODE {dnode}"),
            TdStatement::ShowSnodes => write!(f, "SHOW SNODES"),
            TdStatement::ShowDnodes => write!(f, "SHOW DNODES"),
            TdStatement::CreateStream(c) => write!(f, "{c}"),
            TdStatement::DropStream { if_exists, names } => {
                let n: Vec<String> = names.iter().map(|n| n.to_string()).collect();
                write!(f, "DROP STREAM {}{}", if *if_exists { "IF EXISTS " } else { "" }, n.join(", "))
            }
            TdStatement::ShowStreams { database, like: l } => {
                write!(f, "SHOW {}STREAMS{}", database.as_ref().map(|d| format!("{d}.")).unwrap_or_default(), like(l))
            }
            TdStatement::ShowCreateStream { name } => write!(f, "SHOW CREATE STREAM {name}"),
            TdStatement::StopStream { if_exists, name } => write!(f, "STOP STREAM {}{name}", if *if_exists { "IF EXISTS " } else { "" }),
            TdStatement::StartStream { if_exists, ignore_untreated, name } => write!(
                f,
                "START STREAM {}{}{name}",
                if *if_exists { "IF EXISTS " } else { "" },
                if *ignore_untreated { "IGNORE UNTREATED " } else { "" }
            ),
            TdStatement::Recalculate { name, from, to } => {
                write!(f, "RECALCULATE STREAM {name} FROM {from}")?;
                if let Some(t) = to {
                    write!(f, " TO {t}")?;
                }
                Ok(())
            }
        }
    }
}

/// TDengine's `%%trows`, `%%tbname`, `%%1` placeholders as quoted
/// identifiers (`"%%trows"`): PostgreSQL's tokenizer reads `%%` as an
/// operator, and a stream's query must parse as a query. Only `%%`
/// directly followed by a word or a number is changed.
pub fn placeholder_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut it = tokens.into_iter().peekable();
    while let Some(t) = it.next() {
        let is_pct = matches!(&t.token, Token::CustomBinaryOperator(op) if op == "%%");
        if is_pct {
            if let Some(next) = it.peek() {
                let name = match &next.token {
                    Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
                    Token::Number(n, _) => Some(n.clone()),
                    _ => None,
                };
                let adjacent = next.span.start == t.span.end;
                if let (Some(name), true) = (name, adjacent) {
                    let end = next.span.end;
                    it.next();
                    let word = Word { value: format!("%%{name}"), quote_style: Some('"'), keyword: Keyword::NoKeyword };
                    out.push(TokenWithSpan::new(Token::Word(word), sqlparser::tokenizer::Span::new(t.span.start, end)));
                    continue;
                }
            }
        }
        out.push(t);
    }
    out
}

fn err<T>(what: &str, found: impl fmt::Display) -> Result<T, ParserError> {
    Err(ParserError::ParserError(format!("Expected: {what}, found: {found}")))
}

/// A duration: a number directly followed by its unit (`10s`, `5h30m`).
pub fn parse_duration(p: &mut Parser) -> Result<Duration, ParserError> {
    let t = p.next_token();
    let Token::Number(n, _) = &t.token else { return err("a duration such as 10s", &t.token) };
    let mut text = n.clone();
    if let Token::Word(w) = &p.peek_token_ref().token {
        if w.quote_style.is_none() && p.peek_token_ref().span.start == t.span.end {
            text.push_str(&w.value);
            p.next_token();
        }
    }
    let micros = duration_micros(&text).ok_or_else(|| ParserError::ParserError(format!("Invalid duration: {text}")))?;
    Ok(Duration { text, micros })
}

/// `10s` → Some(Some(10_000_000)); calendar units → Some(None); bad → None.
fn duration_micros(text: &str) -> Option<Option<i64>> {
    let mut total: i64 = 0;
    let mut calendar = false;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let n: i64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.chars().take_while(|c| c.is_ascii_alphabetic()).count();
        let unit = rest[..unit_len].to_lowercase();
        rest = &rest[unit_len..];
        let per: i64 = match unit.as_str() {
            // A bare number is milliseconds (the database's precision).
            "" | "a" => 1_000,
            "b" => {
                total = total.checked_add(n / 1000)?;
                continue;
            }
            "u" => 1,
            "s" => 1_000_000,
            "m" => 60_000_000,
            "h" => 3_600_000_000,
            "d" => 86_400_000_000,
            "w" => 7 * 86_400_000_000,
            "n" | "y" => {
                calendar = true;
                0
            }
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(per)?)?;
    }
    Some(if calendar { None } else { Some(total) })
}

fn expect_word(p: &mut Parser, w: &str) -> Result<(), ParserError> {
    if parse_words(p, &[w]) {
        Ok(())
    } else {
        p.expected_ref(w, p.peek_token_ref())
    }
}

fn parse_int(p: &mut Parser) -> Result<i64, ParserError> {
    let neg = p.consume_token(&Token::Minus);
    let t = p.next_token();
    match &t.token {
        Token::Number(n, _) => {
            let v: i64 = n.parse().map_err(|_| ParserError::ParserError(format!("Expected: an integer, found: {n}")))?;
            Ok(if neg { -v } else { v })
        }
        other => err("an integer", other),
    }
}

fn if_not_exists(p: &mut Parser) -> bool {
    p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS])
}

fn if_exists(p: &mut Parser) -> bool {
    p.parse_keywords(&[Keyword::IF, Keyword::EXISTS])
}

/// Whether the tokens from `at` are `[IF NOT EXISTS] name USING`.
fn using_follows(p: &Parser, mut at: usize) -> bool {
    if peek_words_at(p, at, &["IF", "NOT", "EXISTS"]) {
        at += 3;
    }
    loop {
        if !matches!(p.peek_nth_token_ref(at).token, Token::Word(_)) {
            return false;
        }
        at += 1;
        if p.peek_nth_token_ref(at).token == Token::Period {
            at += 1;
            continue;
        }
        return peek_words_at(p, at, &["USING"]);
    }
}

/// `CREATE TABLE … USING`: a TDengine child table.
pub(super) fn applies_create_child(p: &Parser) -> bool {
    using_follows(p, 2)
}

/// `INSERT INTO ct USING st …`.
pub(super) fn applies_insert_using(p: &Parser) -> bool {
    using_follows(p, 2)
}

fn parse_child(p: &mut Parser) -> Result<ChildSpec, ParserError> {
    let ine = if_not_exists(p);
    let name = p.parse_object_name(false)?;
    expect_word(p, "USING")?;
    let stable = p.parse_object_name(false)?;
    let tag_names = if p.peek_token_ref().token == Token::LParen {
        p.parse_parenthesized_column_list(sqlparser::parser::IsOptional::Mandatory, false)?
    } else {
        vec![]
    };
    expect_word(p, "TAGS")?;
    p.expect_token(&Token::LParen)?;
    let tags = p.parse_comma_separated(Parser::parse_expr)?;
    p.expect_token(&Token::RParen)?;
    Ok(ChildSpec { if_not_exists: ine, name, stable, tag_names, tags })
}

pub(super) fn parse_create_child(p: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(p, &["CREATE", "TABLE"]);
    let mut v = vec![parse_child(p)?];
    while matches!(p.peek_token_ref().token, Token::Word(_)) {
        v.push(parse_child(p)?);
    }
    Ok(Statement::Tdengine(Box::new(TdStatement::CreateChildTables(v))))
}

pub(super) fn parse_insert_using(p: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(p, &["INSERT", "INTO"]);
    let mut parts = Vec::new();
    loop {
        let (table, using) = if using_follows(p, 0) {
            let c = parse_child(p)?;
            (c.name.clone(), Some(c))
        } else {
            (p.parse_object_name(false)?, None)
        };
        let columns = if p.peek_token_ref().token == Token::LParen {
            p.parse_parenthesized_column_list(sqlparser::parser::IsOptional::Mandatory, false)?
        } else {
            vec![]
        };
        p.expect_keyword(Keyword::VALUES)?;
        let mut rows = Vec::new();
        while p.consume_token(&Token::LParen) {
            rows.push(p.parse_comma_separated(Parser::parse_expr)?);
            p.expect_token(&Token::RParen)?;
            let _ = p.consume_token(&Token::Comma);
        }
        if rows.is_empty() {
            return p.expected_ref("(", p.peek_token_ref());
        }
        parts.push(InsertPart { table, using, columns, rows });
        if !matches!(p.peek_token_ref().token, Token::Word(_)) {
            break;
        }
    }
    Ok(Statement::Tdengine(Box::new(TdStatement::InsertUsing(parts))))
}

pub(super) fn parse_create_stable(p: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(p, &["CREATE", "STABLE"]);
    let ine = if_not_exists(p);
    let name = p.parse_object_name(false)?;
    let (columns, constraints) = p.parse_columns()?;
    if !constraints.is_empty() {
        return err("a column definition", "a table constraint");
    }
    expect_word(p, "TAGS")?;
    let (tags, constraints) = p.parse_columns()?;
    if !constraints.is_empty() || tags.is_empty() {
        return err("tag definitions", "a table constraint");
    }
    Ok(Statement::Tdengine(Box::new(TdStatement::CreateStable(CreateStable { if_not_exists: ine, name, columns, tags }))))
}

/// `SHOW [db.]STABLES | STREAMS [LIKE 'p']`.
pub(super) fn applies_show_db(p: &Parser) -> bool {
    let named = |at: usize| peek_words_at(p, at, &["STABLES"]) || peek_words_at(p, at, &["STREAMS"]);
    named(1) || (matches!(p.peek_nth_token_ref(1).token, Token::Word(_)) && p.peek_nth_token_ref(2).token == Token::Period && named(3))
}

pub(super) fn parse_show_db(p: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(p, &["SHOW"]);
    let database = if p.peek_nth_token_ref(1).token == Token::Period {
        let d = p.parse_identifier()?;
        p.expect_token(&Token::Period)?;
        Some(d)
    } else {
        None
    };
    let stables = parse_words(p, &["STABLES"]);
    if !stables {
        expect_word(p, "STREAMS")?;
    }
    let like = if p.parse_keyword(Keyword::LIKE) { Some(p.parse_literal_string()?) } else { None };
    Ok(Statement::Tdengine(Box::new(if stables {
        TdStatement::ShowStables { database, like }
    } else {
        TdStatement::ShowStreams { database, like }
    })))
}

pub(super) fn parse_misc(p: &mut Parser) -> Result<Statement, ParserError> {
    let s = if parse_words(p, &["CREATE", "SNODE", "ON", "DNODE"]) {
        TdStatement::CreateSnode { dnode: parse_int(p)? }
    } else if parse_words(p, &["DROP", "SNODE", "ON", "DNODE"]) {
        TdStatement::DropSnode { dnode: parse_int(p)? }
    } else if parse_words(p, &["SHOW", "SNODES"]) {
        TdStatement::ShowSnodes
    } else if parse_words(p, &["SHOW", "DNODES"]) {
        TdStatement::ShowDnodes
    } else if parse_words(p, &["DROP", "DATABASE"]) {
        let if_exists = if_exists(p);
        let name = p.parse_identifier()?;
        expect_word(p, "FORCE")?;
        TdStatement::DropDatabaseForce { if_exists, name }
    } else if parse_words(p, &["DROP", "STABLE"]) {
        let if_exists = if_exists(p);
        TdStatement::DropStable { if_exists, name: p.parse_object_name(false)? }
    } else if parse_words(p, &["DROP", "STREAM"]) {
        let if_exists = if_exists(p);
        TdStatement::DropStream { if_exists, names: p.parse_comma_separated(|p| p.parse_object_name(false))? }
    } else if parse_words(p, &["SHOW", "CREATE", "STREAM"]) {
        TdStatement::ShowCreateStream { name: p.parse_object_name(false)? }
    } else if parse_words(p, &["STOP", "STREAM"]) {
        let if_exists = if_exists(p);
        TdStatement::StopStream { if_exists, name: p.parse_object_name(false)? }
    } else if parse_words(p, &["START", "STREAM"]) {
        let if_exists = if_exists(p);
        let ignore_untreated = parse_words(p, &["IGNORE", "UNTREATED"]);
        TdStatement::StartStream { if_exists, ignore_untreated, name: p.parse_object_name(false)? }
    } else if parse_words(p, &["RECALCULATE", "STREAM"]) {
        let name = p.parse_object_name(false)?;
        p.expect_keyword(Keyword::FROM)?;
        let from = p.parse_expr()?;
        let to = if p.parse_keyword(Keyword::TO) { Some(p.parse_expr()?) } else { None };
        TdStatement::Recalculate { name, from, to }
    } else {
        return p.expected_ref("a TDengine statement", p.peek_token_ref());
    };
    Ok(Statement::Tdengine(Box::new(s)))
}

fn paren<T>(p: &mut Parser, f: impl FnOnce(&mut Parser) -> Result<T, ParserError>) -> Result<T, ParserError> {
    p.expect_token(&Token::LParen)?;
    let v = f(p)?;
    p.expect_token(&Token::RParen)?;
    Ok(v)
}

fn opt_second_duration(p: &mut Parser) -> Result<Option<Duration>, ParserError> {
    if p.consume_token(&Token::Comma) {
        Ok(Some(parse_duration(p)?))
    } else {
        Ok(None)
    }
}

fn parse_true_for(p: &mut Parser) -> Result<Option<Duration>, ParserError> {
    if parse_words(p, &["TRUE_FOR"]) {
        Ok(Some(paren(p, parse_duration)?))
    } else {
        Ok(None)
    }
}

fn parse_trigger(p: &mut Parser) -> Result<StreamTrigger, ParserError> {
    if parse_words(p, &["PERIOD"]) {
        return paren(p, |p| Ok(StreamTrigger::Period { period: parse_duration(p)?, offset: opt_second_duration(p)? }));
    }
    if parse_words(p, &["SLIDING"]) {
        return paren(p, |p| Ok(StreamTrigger::Sliding { sliding: parse_duration(p)?, offset: opt_second_duration(p)? }));
    }
    if parse_words(p, &["INTERVAL"]) {
        let (interval, offset) = paren(p, |p| Ok((parse_duration(p)?, opt_second_duration(p)?)))?;
        expect_word(p, "SLIDING")?;
        let (sliding, sliding_offset) = paren(p, |p| Ok((parse_duration(p)?, opt_second_duration(p)?)))?;
        return Ok(StreamTrigger::Interval { interval, offset, sliding, sliding_offset });
    }
    if parse_words(p, &["SESSION"]) {
        return paren(p, |p| {
            let column = p.parse_identifier()?;
            p.expect_token(&Token::Comma)?;
            Ok(StreamTrigger::Session { column, gap: parse_duration(p)? })
        });
    }
    if parse_words(p, &["STATE_WINDOW"]) {
        let (expr, extend) = paren(p, |p| {
            let e = p.parse_expr()?;
            let x = if p.consume_token(&Token::Comma) { Some(parse_int(p)?) } else { None };
            Ok((e, x))
        })?;
        return Ok(StreamTrigger::State { expr, extend, true_for: parse_true_for(p)? });
    }
    if parse_words(p, &["EVENT_WINDOW"]) {
        let (start, end) = paren(p, |p| {
            expect_word(p, "START")?;
            p.expect_keyword(Keyword::WITH)?;
            let s = p.parse_expr()?;
            expect_word(p, "END")?;
            p.expect_keyword(Keyword::WITH)?;
            Ok((s, p.parse_expr()?))
        })?;
        return Ok(StreamTrigger::Event { start, end, true_for: parse_true_for(p)? });
    }
    if parse_words(p, &["COUNT_WINDOW"]) {
        return paren(p, |p| {
            let count = parse_int(p)?;
            let mut slide = None;
            let mut columns = Vec::new();
            while p.consume_token(&Token::Comma) {
                if matches!(p.peek_token_ref().token, Token::Number(..)) && slide.is_none() && columns.is_empty() {
                    slide = Some(parse_int(p)?);
                } else {
                    columns.push(p.parse_identifier()?);
                }
            }
            Ok(StreamTrigger::Count { count, slide, columns })
        });
    }
    p.expected_ref("a stream trigger (PERIOD, SLIDING, INTERVAL, SESSION, STATE_WINDOW, EVENT_WINDOW or COUNT_WINDOW)", p.peek_token_ref())
}

fn parse_option(p: &mut Parser) -> Result<StreamOption, ParserError> {
    let t = p.next_token();
    let Token::Word(w) = &t.token else { return err("a stream option", &t.token) };
    let name = w.value.to_uppercase();
    let opt_expr = |p: &mut Parser| -> Result<Option<ast::Expr>, ParserError> {
        if p.peek_token_ref().token == Token::LParen {
            Ok(Some(paren(p, |p| p.parse_expr())?))
        } else {
            Ok(None)
        }
    };
    Ok(match name.as_str() {
        "WATERMARK" => StreamOption::Watermark(paren(p, parse_duration)?),
        "EXPIRED_TIME" => StreamOption::ExpiredTime(paren(p, parse_duration)?),
        "MAX_DELAY" => StreamOption::MaxDelay(paren(p, parse_duration)?),
        "IDLE_TIMEOUT" => StreamOption::IdleTimeout(paren(p, parse_duration)?),
        "IGNORE_DISORDER" => StreamOption::IgnoreDisorder,
        "DELETE_RECALC" => StreamOption::DeleteRecalc,
        "DELETE_OUTPUT_TABLE" => StreamOption::DeleteOutputTable,
        "FILL_HISTORY" => StreamOption::FillHistory(opt_expr(p)?),
        "FILL_HISTORY_FIRST" => StreamOption::FillHistoryFirst(opt_expr(p)?),
        "CALC_NOTIFY_ONLY" => StreamOption::CalcNotifyOnly,
        "LOW_LATENCY_CALC" => StreamOption::LowLatencyCalc,
        "PRE_FILTER" => StreamOption::PreFilter(paren(p, |p| p.parse_expr())?),
        "FORCE_OUTPUT" => StreamOption::ForceOutput,
        "IGNORE_NODATA_TRIGGER" => StreamOption::IgnoreNodataTrigger,
        "EVENT_TYPE" => StreamOption::EventType(paren(p, |p| {
            let mut v = vec![p.parse_identifier()?.value.to_uppercase()];
            while p.consume_token(&Token::Pipe) {
                v.push(p.parse_identifier()?.value.to_uppercase());
            }
            Ok(v)
        })?),
        _ => {
            p.prev_token();
            return p.expected_ref("a stream option", p.peek_token_ref());
        }
    })
}

fn parse_notify(p: &mut Parser) -> Result<Notify, ParserError> {
    let urls = paren(p, |p| p.parse_comma_separated(|p| p.parse_literal_string()))?;
    let mut events = Vec::new();
    if p.parse_keyword(Keyword::ON) {
        events = paren(p, |p| {
            let mut v = vec![p.parse_identifier()?.value.to_uppercase()];
            while p.consume_token(&Token::Pipe) {
                v.push(p.parse_identifier()?.value.to_uppercase());
            }
            Ok(v)
        })?;
    }
    let condition = if p.parse_keyword(Keyword::WHERE) { Some(p.parse_expr()?) } else { None };
    let mut options = Vec::new();
    if parse_words(p, &["NOTIFY_OPTIONS"]) {
        options = paren(p, |p| {
            let mut v = vec![p.parse_identifier()?.value.to_uppercase()];
            while p.consume_token(&Token::Pipe) {
                v.push(p.parse_identifier()?.value.to_uppercase());
            }
            Ok(v)
        })?;
    }
    Ok(Notify { urls, events, condition, options })
}

pub(super) fn parse_create_stream(p: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(p, &["CREATE", "STREAM"]);
    let ine = if_not_exists(p);
    let name = p.parse_object_name(false)?;
    let trigger = parse_trigger(p)?;
    let from = if p.parse_keyword(Keyword::FROM) { Some(p.parse_object_name(false)?) } else { None };
    let partition =
        if p.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) { p.parse_comma_separated(|p| p.parse_identifier())? } else { vec![] };
    let mut options = Vec::new();
    if parse_words(p, &["STREAM_OPTIONS"]) {
        options = paren(p, |p| {
            let mut v = vec![parse_option(p)?];
            while p.consume_token(&Token::Pipe) {
                v.push(parse_option(p)?);
            }
            Ok(v)
        })?;
    }
    let notify = if parse_words(p, &["NOTIFY"]) { Some(parse_notify(p)?) } else { None };
    let into = if p.parse_keyword(Keyword::INTO) { Some(p.parse_object_name(false)?) } else { None };
    let output_subtable = if parse_words(p, &["OUTPUT_SUBTABLE"]) { Some(paren(p, |p| p.parse_expr())?) } else { None };
    let columns = if p.peek_token_ref().token == Token::LParen {
        p.parse_parenthesized_column_list(sqlparser::parser::IsOptional::Mandatory, false)?
    } else {
        vec![]
    };
    let mut tags = Vec::new();
    if parse_words(p, &["TAGS"]) {
        tags = paren(p, |p| {
            p.parse_comma_separated(|p| {
                let name = p.parse_identifier()?;
                let data_type = p.parse_data_type()?;
                if p.parse_keyword(Keyword::COMMENT) {
                    p.parse_literal_string()?;
                }
                p.expect_keyword(Keyword::AS)?;
                Ok(OutputTag { name, data_type, expr: p.parse_expr()? })
            })
        })?;
    }
    let query = if p.parse_keyword(Keyword::AS) { Some(p.parse_query()?) } else { None };
    Ok(Statement::Tdengine(Box::new(TdStatement::CreateStream(Box::new(CreateStream {
        if_not_exists: ine,
        name,
        trigger,
        from,
        partition,
        options,
        notify,
        into,
        output_subtable,
        columns,
        tags,
        query,
    })))))
}

/// Whether the statement's leading words are TDengine's (for rows of
/// `WEIR_STATEMENTS` that share words with other statements).
pub(super) fn applies_misc(p: &Parser) -> bool {
    const FORMS: &[&[&str]] = &[
        &["CREATE", "SNODE"],
        &["DROP", "SNODE"],
        &["SHOW", "SNODES"],
        &["SHOW", "DNODES"],
        &["DROP", "STABLE"],
        &["DROP", "STREAM"],
        &["SHOW", "CREATE", "STREAM"],
        &["STOP", "STREAM"],
        &["START", "STREAM"],
        &["RECALCULATE", "STREAM"],
    ];
    // DROP DATABASE [IF EXISTS] db FORCE (TDengine's; PostgreSQL's FORCE
    // is `WITH (FORCE)`).
    let at = if peek_words_at(p, 2, &["IF", "EXISTS"]) { 4 } else { 2 };
    let drop_force = peek_words(p, &["DROP", "DATABASE"])
        && matches!(p.peek_nth_token_ref(at).token, Token::Word(_))
        && peek_words_at(p, at + 1, &["FORCE"]);
    drop_force || FORMS.iter().any(|f| peek_words(p, f))
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Statement};
    use super::*;

    fn td(sql: &str) -> TdStatement {
        match parse(sql).unwrap().pop().unwrap() {
            Statement::Tdengine(t) => *t,
            other => panic!("not a TDengine statement: {other:?}"),
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration_micros("10s"), Some(Some(10_000_000)));
        assert_eq!(duration_micros("5h30m"), Some(Some(5 * 3_600_000_000 + 30 * 60_000_000)));
        assert_eq!(duration_micros("100a"), Some(Some(100_000)));
        assert_eq!(duration_micros("1n"), Some(None));
        assert_eq!(duration_micros("1x"), None);
    }

    #[test]
    fn statements_round_trip() {
        for sql in [
            "CREATE STABLE st (ts TIMESTAMP, c1 INT) TAGS (t1 INT, t2 VARCHAR(20))",
            "CREATE TABLE ct1 USING st TAGS (1, 'a') IF NOT EXISTS ct2 USING st (t1) TAGS (2)",
            "INSERT INTO ct1 USING st TAGS (1, 'a') VALUES ('2025-01-01 00:00:00', 1), ('2025-01-01 00:00:01', 2) ct2 (ts, c1) VALUES ('2025-01-01 00:00:00', 3)",
            "CREATE SNODE ON DNODE 1",
            "SHOW SNODES",
            "SHOW db.STREAMS LIKE 's%'",
            "CREATE STREAM s0 STATE_WINDOW(cint) FROM ct1 STREAM_OPTIONS(WATERMARK(10s)|IGNORE_DISORDER) INTO res_ct1 (firstts, cnt_v) AS SELECT _twstart, count(cint) FROM \"%%trows\"",
            "CREATE STREAM IF NOT EXISTS d.s INTERVAL(2m) SLIDING(2m) FROM tdb.tr PARTITION BY tbname INTO rdb.r OUTPUT_SUBTABLE(concat('a_', tbname)) TAGS (tag_tbname VARCHAR(128) AS tbname) AS SELECT _twstart AS ts, count(*) AS cnt FROM qdb.meters WHERE cts >= _twstart AND cts < _twend",
            "CREATE STREAM s EVENT_WINDOW(START WITH v >= 5 END WITH v > 10) TRUE_FOR(1s) FROM t INTO o AS SELECT _twstart, count(*) FROM t",
            "CREATE STREAM s COUNT_WINDOW(3, 1, c1, c2) FROM t INTO o AS SELECT _twstart, count(*) FROM t",
            "CREATE STREAM s PERIOD(5h30m, 1m) NOTIFY('ws://h:8080/n') ON (WINDOW_OPEN|WINDOW_CLOSE)",
            "RECALCULATE STREAM rdb.s FROM '2025-01-01 02:00:00' TO '2025-01-01 02:01:00'",
            "START STREAM IF EXISTS IGNORE UNTREATED s",
            "DROP STREAM IF EXISTS s1, d.s2",
            "DROP DATABASE IF EXISTS tdb FORCE",
            "DROP DATABASE tdb FORCE",
        ] {
            let s = td(sql);
            let again = td(&s.to_string());
            assert_eq!(s, again, "{sql} -> {s}");
        }
    }

    #[test]
    fn placeholders_become_identifiers() {
        let s = td("CREATE STREAM s SESSION(ts, 45s) FROM st PARTITION BY tbname INTO o AS SELECT _twstart, count(*), %%1 FROM %%trows WHERE tb = %%tbname");
        let TdStatement::CreateStream(c) = s else { panic!() };
        let q = c.query.unwrap().to_string();
        assert!(q.contains("FROM \"%%trows\""), "{q}");
        assert!(q.contains("\"%%1\""), "{q}");
        assert!(q.contains("\"%%tbname\""), "{q}");
    }

    #[test]
    fn plain_create_table_and_insert_stay_sqlparsers() {
        assert!(matches!(parse("CREATE TABLE t (ts TIMESTAMP TIME INDEX, v INT)").unwrap()[0], Statement::CreateTable(_)));
        assert!(matches!(parse("INSERT INTO t VALUES (1, 2)").unwrap()[0], Statement::Sql(_)));
        assert!(parse("CREATE STREAM s FOO(1s) INTO o AS SELECT 1").is_err());
    }
}
