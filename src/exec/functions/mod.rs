//! Scalar functions: the registry (`registry.rs`: signatures, strictness,
//! volatility, resolution, 42883) and the built-in table below, with
//! vectorized implementations by area (`math`, `string`, `datetime`,
//! `to_char`, `temporal` for the date/time operators).
//!
//! May import `types`, `error` and the rest of `exec`; nothing above it.

pub mod array;
pub mod bytea;
pub mod datetime;
pub mod hash;
pub mod math;
pub mod num_format;
pub mod regexp;
pub mod registry;
pub mod string;
pub mod temporal;
pub mod to_char;

use std::sync::Arc;

use arrow::array::*;

use self::registry::{Arg, Args, FuncDef, Impl, Signature, Volatility};
use super::expr::{cast_array, Expr};
use super::ExecCtx;
use crate::bail;
use crate::error::Result;
use crate::types::{value_at, SqlType, Value};

pub use registry::{registry, Resolved};

pub fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Signature with concrete argument types.
fn s(args: &[SqlType], ret: SqlType) -> Signature {
    Signature { args: args.iter().map(|t| Arg::T(*t)).collect(), variadic: None, ret }
}

/// Signature with `n` arguments of any type.
fn any(n: usize, ret: SqlType) -> Signature {
    Signature { args: vec![Arg::Any; n], variadic: None, ret }
}

/// Signature with fixed arguments then any number of `variadic`.
fn var(args: &[Arg], variadic: Arg, ret: SqlType) -> Signature {
    Signature { args: args.to_vec(), variadic: Some(variadic), ret }
}

struct Def {
    name: &'static str,
    aliases: &'static [&'static str],
    sigs: Vec<Signature>,
    strict: bool,
    volatility: Volatility,
    imp: Impl,
}

impl Def {
    fn new(name: &'static str, sigs: Vec<Signature>, imp: registry::VectorFn) -> Def {
        Def { name, aliases: &[], sigs, strict: true, volatility: Volatility::Immutable, imp: Impl::Vector(imp) }
    }
    fn alias(mut self, a: &'static [&'static str]) -> Def {
        self.aliases = a;
        self
    }
    fn stable(mut self) -> Def {
        self.volatility = Volatility::Stable;
        self
    }
    fn volatile(mut self) -> Def {
        self.volatility = Volatility::Volatile;
        self
    }
    fn lenient(mut self) -> Def {
        self.strict = false;
        self
    }
    fn special(mut self) -> Def {
        self.imp = Impl::Special;
        self.strict = false;
        self
    }
    fn done(self) -> FuncDef {
        FuncDef { name: self.name, aliases: self.aliases, sigs: self.sigs, strict: self.strict, volatility: self.volatility, imp: self.imp }
    }
}

fn unsupported_special(_: &Args<'_>) -> Result<ArrayRef> {
    bail!(Internal, "special function evaluated through the registry")
}

/// The bytea form of a function when its first argument is bytea, else the text form.
fn by_type(a: &Args<'_>, bytes: impl Fn(&Args<'_>) -> Result<ArrayRef>, text: registry::VectorFn) -> Result<ArrayRef> {
    if a.types.first() == Some(&SqlType::Bytea) {
        bytes(a)
    } else {
        text(a)
    }
}

/// Every built-in scalar function.
pub(crate) fn builtins() -> Vec<FuncDef> {
    use SqlType::*;
    let f8 = |n: usize| s(&vec![Float8; n], Float8);
    let ints_same = |extra: &[SqlType]| -> Vec<Signature> {
        [Int2, Int4, Int8, Float4, Float8]
            .iter()
            .map(|t| {
                let mut a = vec![*t];
                a.extend_from_slice(extra);
                s(&a, *t)
            })
            .collect()
    };
    let ts_sigs = |first: &[SqlType], ret_same: bool, ret: SqlType| -> Vec<Signature> {
        [Timestamp, TimestampTz]
            .iter()
            .map(|t| {
                let mut a = first.to_vec();
                a.push(*t);
                s(&a, if ret_same { *t } else { ret })
            })
            .collect()
    };
    // date_part / extract (field, timestamp | timestamptz | interval | date).
    let part_sigs = |ret: SqlType| -> Vec<Signature> {
        let mut v = ts_sigs(&[Text], false, ret);
        v.push(s(&[Text, Interval], ret));
        v.push(s(&[Text, Date], ret));
        v.push(s(&[Text, Time], ret));
        v.push(s(&[Text, TimeTz], ret));
        v
    };
    let tumble_sigs: Vec<Signature> =
        [Timestamp, TimestampTz].iter().flat_map(|t| [s(&[*t, Interval], *t), s(&[*t, Interval, *t], *t)]).collect();
    let hop_sigs: Vec<Signature> = [Timestamp, TimestampTz]
        .iter()
        .flat_map(|t| [s(&[*t, Interval, Interval], *t), s(&[*t, Interval, Interval, *t], *t), s(&[*t, Interval, Interval, *t, Int8], *t)])
        .collect();
    let any_t = Arg::Any;
    let text_arr = SqlType::Array(crate::types::Elem::Text);
    let f8_arr = SqlType::Array(crate::types::Elem::Float8);
    let defs = vec![
        // Conditional expressions: evaluated lazily by the binder/evaluator.
        Def::new("coalesce", vec![var(&[], any_t, Unknown)], unsupported_special).special(),
        Def::new("nullif", vec![any(2, Unknown)], unsupported_special).special(),
        Def::new("greatest", vec![var(&[], any_t, Unknown)], unsupported_special).special(),
        Def::new("least", vec![var(&[], any_t, Unknown)], unsupported_special).special(),
        // Math.
        Def::new("abs", [ints_same(&[]), vec![s(&[Numeric], Numeric)]].concat(), math::abs),
        Def::new("sign", vec![f8(1), s(&[Numeric], Numeric)], math::sign),
        Def::new(
            "round",
            vec![f8(1), s(&[Float8, Int8], Float8), s(&[Numeric], Numeric), s(&[Numeric, Int4], Numeric), s(&[Numeric, Int8], Numeric)],
            math::round,
        ),
        Def::new(
            "trunc",
            vec![f8(1), s(&[Float8, Int8], Float8), s(&[Numeric], Numeric), s(&[Numeric, Int4], Numeric), s(&[Numeric, Int8], Numeric)],
            math::trunc,
        ),
        Def::new("floor", vec![s(&[Int2], Int2), s(&[Int4], Int4), s(&[Int8], Int8), f8(1), s(&[Numeric], Numeric)], math::floor),
        Def::new("ceil", vec![s(&[Int2], Int2), s(&[Int4], Int4), s(&[Int8], Int8), f8(1), s(&[Numeric], Numeric)], math::ceil)
            .alias(&["ceiling"]),
        // NUMERIC's own functions (exec::numeric); numeric_typmod applies
        // a NUMERIC(p, s) cast's typmod.
        Def::new("div", vec![s(&[Numeric, Numeric], Numeric)], math::numeric_only),
        Def::new(
            "width_bucket",
            vec![s(&[Float8, Float8, Float8, Int4], Int4), s(&[Numeric, Numeric, Numeric, Int4], Int4)],
            math::width_bucket,
        ),
        Def::new("scale", vec![s(&[Numeric], Int4)], math::numeric_only),
        Def::new("min_scale", vec![s(&[Numeric], Int4)], math::numeric_only),
        Def::new("trim_scale", vec![s(&[Numeric], Numeric)], math::numeric_only),
        Def::new("numeric_typmod", vec![s(&[Numeric, Int4], Numeric)], math::numeric_only),
        Def::new("sqrt", vec![f8(1), s(&[Numeric], Numeric)], math::sqrt),
        Def::new("cbrt", vec![f8(1)], math::cbrt),
        Def::new("exp", vec![f8(1), s(&[Numeric], Numeric)], math::exp),
        Def::new("ln", vec![f8(1), s(&[Numeric], Numeric)], math::ln),
        Def::new("log", vec![f8(1), f8(2), s(&[Numeric], Numeric), s(&[Numeric, Numeric], Numeric)], math::log),
        Def::new("log10", vec![f8(1), s(&[Numeric], Numeric)], math::log),
        Def::new("power", vec![f8(2), s(&[Numeric, Numeric], Numeric)], math::power).alias(&["pow"]),
        Def::new("pi", vec![s(&[], Float8)], math::pi),
        Def::new("degrees", vec![f8(1)], math::degrees),
        Def::new("radians", vec![f8(1)], math::radians),
        Def::new("sin", vec![f8(1)], math::sin),
        Def::new("cos", vec![f8(1)], math::cos),
        Def::new("tan", vec![f8(1)], math::tan),
        Def::new("cot", vec![f8(1)], math::cot),
        Def::new("asin", vec![f8(1)], math::asin),
        Def::new("acos", vec![f8(1)], math::acos),
        Def::new("atan", vec![f8(1)], math::atan),
        Def::new("atan2", vec![f8(2)], math::atan2),
        Def::new("sind", vec![f8(1)], math::sind),
        Def::new("cosd", vec![f8(1)], math::cosd),
        Def::new("tand", vec![f8(1)], math::tand),
        Def::new("cotd", vec![f8(1)], math::cotd),
        Def::new("asind", vec![f8(1)], math::asind),
        Def::new("acosd", vec![f8(1)], math::acosd),
        Def::new("atand", vec![f8(1)], math::atand),
        Def::new("atan2d", vec![f8(2)], math::atan2d),
        Def::new("sinh", vec![f8(1)], math::sinh),
        Def::new("cosh", vec![f8(1)], math::cosh),
        Def::new("tanh", vec![f8(1)], math::tanh),
        Def::new("asinh", vec![f8(1)], math::asinh),
        Def::new("acosh", vec![f8(1)], math::acosh),
        Def::new("atanh", vec![f8(1)], math::atanh),
        Def::new("random", vec![s(&[], Float8)], math::random).volatile(),
        Def::new(
            "mod",
            vec![
                s(&[Int2, Int2], Int2),
                s(&[Int4, Int4], Int4),
                s(&[Int8, Int8], Int8),
                s(&[Float8, Float8], Float8),
                s(&[Numeric, Numeric], Numeric),
            ],
            math::modulo,
        ),
        // Bitwise operators on integers (`&`, `|`, `#`), PostgreSQL's int*and/or/xor.
        Def::new("int8and", vec![s(&[Int2, Int2], Int2), s(&[Int4, Int4], Int4), s(&[Int8, Int8], Int8)], math::bitand)
            .alias(&["int2and", "int4and"]),
        Def::new("int8or", vec![s(&[Int2, Int2], Int2), s(&[Int4, Int4], Int4), s(&[Int8, Int8], Int8)], math::bitor)
            .alias(&["int2or", "int4or"]),
        Def::new("int8xor", vec![s(&[Int2, Int2], Int2), s(&[Int4, Int4], Int4), s(&[Int8, Int8], Int8)], math::bitxor)
            .alias(&["int2xor", "int4xor"]),
        Def::new("int8shl", vec![s(&[Int2, Int4], Int2), s(&[Int4, Int4], Int4), s(&[Int8, Int4], Int8)], |a| math::shift(a, true))
            .alias(&["int2shl", "int4shl"]),
        Def::new("int8shr", vec![s(&[Int2, Int4], Int2), s(&[Int4, Int4], Int4), s(&[Int8, Int4], Int8)], |a| math::shift(a, false))
            .alias(&["int2shr", "int4shr"]),
        Def::new("int8not", vec![s(&[Int2], Int2), s(&[Int4], Int4), s(&[Int8], Int8)], math::bitnot).alias(&["int2not", "int4not"]),
        // The hash opclass support functions, with PostgreSQL's values.
        Def::new("hashint2", vec![s(&[Int2], Int4)], math::hash_int),
        Def::new("hashint4", vec![s(&[Int4], Int4)], math::hash_int),
        Def::new("hashint8", vec![s(&[Int8], Int4)], math::hash_int),
        Def::new("gcd", vec![s(&[Int4, Int4], Int4), s(&[Int8, Int8], Int8), s(&[Numeric, Numeric], Numeric)], math::gcd_lcm),
        // The integer operators' functions, which aggregates name as
        // support functions (SFUNC = int4pl).
        Def::new("int2pl", vec![s(&[Int2, Int2], Int2)], math::int_op),
        Def::new("int4_sum", vec![s(&[Int8, Int4], Int8)], math::int_sum_transition).lenient(),
        Def::new("int2_sum", vec![s(&[Int8, Int2], Int8)], math::int_sum_transition).lenient(),
        Def::new("int4pl", vec![s(&[Int4, Int4], Int4)], math::int_op),
        Def::new("int8pl", vec![s(&[Int8, Int8], Int8)], math::int_op),
        Def::new("int2mi", vec![s(&[Int2, Int2], Int2)], math::int_op),
        Def::new("int4mi", vec![s(&[Int4, Int4], Int4)], math::int_op),
        Def::new("int8mi", vec![s(&[Int8, Int8], Int8)], math::int_op),
        Def::new("int2mul", vec![s(&[Int2, Int2], Int2)], math::int_op),
        Def::new("int4mul", vec![s(&[Int4, Int4], Int4)], math::int_op),
        Def::new("int8mul", vec![s(&[Int8, Int8], Int8)], math::int_op),
        Def::new("lcm", vec![s(&[Int4, Int4], Int4), s(&[Int8, Int8], Int8), s(&[Numeric, Numeric], Numeric)], math::gcd_lcm),
        Def::new("factorial", vec![s(&[Int8], Numeric)], math::factorial),
        Def::new("numeric_inc", vec![s(&[Numeric], Numeric)], math::numeric_only),
        Def::new("float4send", vec![s(&[Float4], Bytea)], math::float_send),
        // The statistics aggregates' support functions (`exec::float_stats`).
        Def::new("float8_accum", vec![s(&[f8_arr, Float8], f8_arr)], math::float8_stats),
        Def::new("float8_regr_accum", vec![s(&[f8_arr, Float8, Float8], f8_arr)], math::float8_stats),
        Def::new("float8_combine", vec![s(&[f8_arr, f8_arr], f8_arr)], math::float8_stats),
        Def::new("float8_regr_combine", vec![s(&[f8_arr, f8_arr], f8_arr)], math::float8_stats),
        Def::new("booland_statefunc", vec![s(&[Bool, Bool], Bool)], math::bool_statefunc),
        Def::new("boolor_statefunc", vec![s(&[Bool, Bool], Bool)], math::bool_statefunc),
        Def::new("float8send", vec![s(&[Float8], Bytea)], math::float_send),
        // Strings.
        Def::new("translate", vec![s(&[Text, Text, Text], Text)], string::translate),
        Def::new("to_hex", vec![s(&[Int4], Text), s(&[Int8], Text)], string::to_hex),
        Def::new("unistr", vec![s(&[Text], Text)], string::unistr),
        Def::new("quote_literal", vec![s(&[Text], Text), any(1, Text)], string::quote_literal),
        Def::new("quote_nullable", vec![s(&[Text], Text), any(1, Text)], string::quote_literal).lenient(),
        Def::new("lower", vec![s(&[Text], Text)], string::lower),
        Def::new("upper", vec![s(&[Text], Text)], string::upper),
        Def::new("initcap", vec![s(&[Text], Text)], string::initcap),
        Def::new("reverse", vec![s(&[Text], Text)], string::reverse),
        Def::new("quote_ident", vec![s(&[Text], Text)], string::quote_ident),
        Def::new("length", vec![s(&[Text], Int4), s(&[Bytea], Int4)], |a| by_type(a, bytea::length, string::length))
            .alias(&["char_length", "character_length"]),
        Def::new("octet_length", vec![s(&[Text], Int4), s(&[Bytea], Int4)], |a| by_type(a, bytea::length, string::octet_length)),
        Def::new("ascii", vec![s(&[Text], Int4)], string::ascii),
        Def::new("chr", vec![s(&[Int8], Text)], string::chr),
        Def::new("repeat", vec![s(&[Text, Int8], Text)], string::repeat),
        Def::new("btrim", vec![s(&[Text], Text), s(&[Text, Text], Text), s(&[Bytea, Bytea], Bytea)], |a| {
            by_type(a, |a| bytea::trim(a, true, true), string::btrim)
        })
        .alias(&["trim"]),
        Def::new("ltrim", vec![s(&[Text], Text), s(&[Text, Text], Text), s(&[Bytea, Bytea], Bytea)], |a| {
            by_type(a, |a| bytea::trim(a, true, false), string::ltrim)
        }),
        Def::new("rtrim", vec![s(&[Text], Text), s(&[Text, Text], Text), s(&[Bytea, Bytea], Bytea)], |a| {
            by_type(a, |a| bytea::trim(a, false, true), string::rtrim)
        }),
        Def::new(
            "substr",
            vec![s(&[Text, Int8], Text), s(&[Text, Int8, Int8], Text), s(&[Bytea, Int8], Bytea), s(&[Bytea, Int8, Int8], Bytea)],
            |a| by_type(a, bytea::substr, string::substr),
        )
        .alias(&["substring"]),
        Def::new(
            "overlay",
            vec![
                s(&[Text, Text, Int8], Text),
                s(&[Text, Text, Int8, Int8], Text),
                s(&[Bytea, Bytea, Int8], Bytea),
                s(&[Bytea, Bytea, Int8, Int8], Bytea),
            ],
            |a| by_type(a, bytea::overlay, string::overlay),
        ),
        Def::new("left", vec![s(&[Text, Int8], Text)], string::left),
        Def::new("right", vec![s(&[Text, Int8], Text)], string::right),
        Def::new("lpad", vec![s(&[Text, Int8], Text), s(&[Text, Int8, Text], Text)], string::lpad),
        Def::new("rpad", vec![s(&[Text, Int8], Text), s(&[Text, Int8, Text], Text)], string::rpad),
        Def::new("replace", vec![s(&[Text, Text, Text], Text)], string::replace),
        Def::new("like_escape", vec![s(&[Text, Text], Text)], string::like_escape),
        Def::new("split_part", vec![s(&[Text, Text, Int8], Text)], string::split_part),
        Def::new("strpos", vec![s(&[Text, Text], Int4), s(&[Bytea, Bytea], Int4)], |a| by_type(a, bytea::position, string::strpos))
            .alias(&["position"]),
        // bytea (`bytea.rs`): values are canonical hex text.
        Def::new("byteacat", vec![s(&[Bytea, Bytea], Bytea)], bytea::concat),
        Def::new("bytea_latin1", vec![s(&[Bytea], Text)], bytea::as_latin1),
        Def::new("md5", vec![s(&[Text], Text), s(&[Bytea], Text)], bytea::md5),
        // PostgreSQL's seeded hash support functions (`hash.rs`), bit for bit.
        Def::new("hashtext", vec![s(&[Text], Int4)], hash::hash_text),
        Def::new("hashint2extended", vec![s(&[Int2, Int8], Int8)], hash::hash_int_extended),
        Def::new("hashint4extended", vec![s(&[Int4, Int8], Int8)], hash::hash_int_extended),
        Def::new("hashint8extended", vec![s(&[Int8, Int8], Int8)], hash::hash_int_extended),
        Def::new("hashtextextended", vec![s(&[Text, Int8], Int8)], hash::hash_text_extended),
        Def::new("sha224", vec![s(&[Bytea], Bytea)], bytea::sha),
        Def::new("sha256", vec![s(&[Bytea], Bytea)], bytea::sha),
        Def::new("sha384", vec![s(&[Bytea], Bytea)], bytea::sha),
        Def::new("sha512", vec![s(&[Bytea], Bytea)], bytea::sha),
        Def::new("encode", vec![s(&[Bytea, Text], Text)], bytea::encode),
        Def::new("decode", vec![s(&[Text, Text], Bytea)], bytea::decode),
        Def::new("get_bit", vec![s(&[Bytea, Int8], Int4)], bytea::get_byte),
        Def::new("get_byte", vec![s(&[Bytea, Int8], Int4)], bytea::get_byte),
        Def::new("set_bit", vec![s(&[Bytea, Int8, Int8], Bytea)], bytea::set_byte),
        Def::new("set_byte", vec![s(&[Bytea, Int8, Int8], Bytea)], bytea::set_byte),
        Def::new("bit_count", vec![s(&[Bytea], Int8)], bytea::bit_count),
        Def::new("convert_to", vec![s(&[Text, Text], Bytea)], bytea::convert),
        Def::new("convert_from", vec![s(&[Bytea, Text], Text)], bytea::convert),
        Def::new("starts_with", vec![s(&[Text, Text], Bool)], string::starts_with),
        Def::new("concat", vec![var(&[], any_t, Text)], string::concat).lenient(),
        Def::new("concat_ws", vec![var(&[Arg::T(Text)], any_t, Text)], string::concat_ws).lenient(),
        Def::new("format", vec![var(&[Arg::T(Text)], any_t, Text)], string::format).lenient(),
        Def::new("regex_match", vec![s(&[Text, Text], Bool)], |a| regexp::regex_match(a, false)),
        // PostgreSQL's regexp_* functions (`regexp.rs`).
        Def::new(
            "regexp_replace",
            vec![
                s(&[Text, Text, Text], Text),
                s(&[Text, Text, Text, Text], Text),
                s(&[Text, Text, Text, Int8], Text),
                s(&[Text, Text, Text, Int8, Int8], Text),
                s(&[Text, Text, Text, Int8, Int8, Text], Text),
            ],
            regexp::regexp_replace,
        ),
        Def::new(
            "regexp_count",
            vec![s(&[Text, Text], Int4), s(&[Text, Text, Int8], Int4), s(&[Text, Text, Int8, Text], Int4)],
            regexp::regexp_count,
        ),
        Def::new("regexp_like", vec![s(&[Text, Text], Bool), s(&[Text, Text, Text], Bool)], regexp::regexp_like),
        Def::new(
            "regexp_instr",
            vec![
                s(&[Text, Text], Int4),
                s(&[Text, Text, Int8], Int4),
                s(&[Text, Text, Int8, Int8], Int4),
                s(&[Text, Text, Int8, Int8, Int8], Int4),
                s(&[Text, Text, Int8, Int8, Int8, Text], Int4),
                s(&[Text, Text, Int8, Int8, Int8, Text, Int8], Int4),
            ],
            regexp::regexp_instr,
        ),
        Def::new(
            "regexp_substr",
            vec![
                s(&[Text, Text], Text),
                s(&[Text, Text, Int8], Text),
                s(&[Text, Text, Int8, Int8], Text),
                s(&[Text, Text, Int8, Int8, Text], Text),
                s(&[Text, Text, Int8, Int8, Text, Int8], Text),
            ],
            regexp::regexp_substr,
        ),
        Def::new("regexp_match", vec![s(&[Text, Text], text_arr), s(&[Text, Text, Text], text_arr)], regexp::regexp_match),
        // regexp_matches and regexp_split_to_table are set-returning: the
        // binder unnests these arrays (`srf::unnest_of`).
        Def::new("regexp_matches_array", vec![s(&[Text, Text], Text), s(&[Text, Text, Text], Text)], regexp::regexp_matches_all),
        Def::new(
            "regexp_split_to_array",
            vec![s(&[Text, Text], text_arr), s(&[Text, Text, Text], text_arr)],
            regexp::regexp_split_to_array,
        ),
        Def::new(
            "regexp_split_to_table_array",
            vec![s(&[Text, Text], text_arr), s(&[Text, Text, Text], text_arr)],
            regexp::regexp_split_to_array,
        ),
        // substring(x from pattern), substring(x similar pattern escape e) and
        // SIMILAR TO's pattern (the binder picks them).
        Def::new("substring_regex", vec![s(&[Text, Text], Text)], regexp::substring_regex),
        Def::new("substring_similar", vec![s(&[Text, Text, Text], Text)], regexp::substring_similar),
        Def::new("similar_to_escape", vec![s(&[Text], Text), s(&[Text, Text], Text)], regexp::similar_to_escape),
        Def::new("regex_imatch", vec![s(&[Text, Text], Bool)], |a| regexp::regex_match(a, true)),
        Def::new(
            "to_char",
            vec![
                s(&[Timestamp, Text], Text),
                s(&[TimestampTz, Text], Text),
                s(&[Interval, Text], Text),
                s(&[Int4, Text], Text),
                s(&[Int8, Text], Text),
                s(&[Float4, Text], Text),
                s(&[Float8, Text], Text),
                s(&[Numeric, Text], Text),
            ],
            to_char_impl,
        )
        // PostgreSQL: to_char of a timestamptz depends on the time zone.
        .stable(),
        Def::new("to_number", vec![s(&[Text, Text], Numeric)], to_number_impl),
        // Date and time.
        Def::new("now", vec![s(&[], TimestampTz)], datetime::statement_timestamp).alias(&["transaction_timestamp"]).stable(),
        Def::new("statement_timestamp", vec![s(&[], TimestampTz)], datetime::statement_start).stable(),
        // CURRENT_TIMESTAMP(p) / LOCALTIMESTAMP(p): rounded to p fractional digits.
        Def::new("current_timestamp", vec![s(&[], TimestampTz), s(&[Int4], TimestampTz)], datetime::statement_timestamp).stable(),
        Def::new("localtimestamp", vec![s(&[], Timestamp), s(&[Int4], Timestamp)], datetime::statement_timestamp).stable(),
        Def::new("current_date", vec![s(&[], Date)], datetime::current_date).stable(),
        // CURRENT_TIME(p) / LOCALTIME(p): rounded to p fractional digits.
        Def::new("current_time", vec![s(&[], TimeTz), s(&[Int4], TimeTz)], datetime::current_time).stable(),
        Def::new("localtime", vec![s(&[], Time), s(&[Int4], Time)], datetime::current_time).stable(),
        Def::new("make_time", vec![s(&[Int4, Int4, Float8], Time)], datetime::make_time),
        Def::new("time_typmod", vec![s(&[Time, Int4], Time), s(&[TimeTz, Int4], TimeTz)], datetime::time_typmod),
        // The functions of the time operators (`+`, `-`).
        Def::new("time_pl_interval", vec![s(&[Time, Interval], Time)], datetime::time_arith),
        Def::new("time_mi_interval", vec![s(&[Time, Interval], Time)], datetime::time_arith),
        Def::new("timetz_pl_interval", vec![s(&[TimeTz, Interval], TimeTz)], datetime::time_arith),
        Def::new("timetz_mi_interval", vec![s(&[TimeTz, Interval], TimeTz)], datetime::time_arith),
        Def::new("time_mi_time", vec![s(&[Time, Time], Interval)], datetime::time_arith),
        // A window's RANGE offset over a time or timetz key (the binder's).
        Def::new("time_range_key", vec![s(&[Time], Int8), s(&[TimeTz], Int8)], datetime::time_range_key),
        Def::new("time_range_offset", vec![s(&[Interval, Bool], Int8)], datetime::time_range_offset),
        Def::new("clock_timestamp", vec![s(&[], TimestampTz)], datetime::clock_timestamp).volatile(),
        Def::new("to_timestamp", vec![f8(1).with_ret(TimestampTz)], datetime::to_timestamp),
        Def::new(
            "date_trunc",
            {
                let mut v = ts_sigs(&[Text], true, Timestamp);
                v.push(s(&[Text, Interval], Interval));
                v.push(s(&[Text, TimestampTz, Text], TimestampTz));
                v
            },
            datetime::date_trunc,
        )
        .alias(&["datetrunc"]),
        Def::new(
            "date_bin",
            {
                let mut v = vec![s(&[Interval, Timestamp, Timestamp], Timestamp), s(&[Interval, TimestampTz, TimestampTz], TimestampTz)];
                v.extend(ts_sigs(&[Interval], true, Timestamp));
                v
            },
            datetime::date_bin,
        ),
        Def::new("time_bucket", ts_sigs(&[Interval], true, Timestamp), datetime::date_bin),
        // GreptimeDB's flow window: tumble(ts, stride[, origin]).
        Def::new("tumble", tumble_sigs.clone(), datetime::tumble).alias(&["tumble_start"]),
        Def::new("tumble_end", tumble_sigs, datetime::tumble_end),
        // Hopping (sliding) flow window: hop(ts, slide, size[, origin]).
        Def::new("hop", hop_sigs, datetime::hop),
        Def::new("date_part", part_sigs(Float8), datetime::date_part),
        Def::new("extract", part_sigs(Numeric), datetime::extract),
        // AT TIME ZONE: timezone(zone, timestamptz) is wall-clock time there,
        // timezone(zone, timestamp) the instant of that wall-clock time there.
        Def::new("timezone", vec![s(&[Text, TimestampTz], Timestamp), s(&[Text, Timestamp], TimestampTz)], datetime::timezone),
        Def::new("make_date", vec![s(&[Int4, Int4, Int4], Date)], datetime::make_date),
        Def::new("interval_typmod", vec![s(&[Interval, Int4, Int4], Interval)], datetime::interval_typmod),
        Def::new("make_interval", vec![s(&[Int4, Int4, Int4, Int4, Int4, Int4, Float8], Interval)], datetime::make_interval),
        Def::new("make_timestamp", vec![s(&[Int4, Int4, Int4, Int4, Int4, Float8], Timestamp)], datetime::make_timestamp),
        Def::new(
            "make_timestamptz",
            vec![s(&[Int4, Int4, Int4, Int4, Int4, Float8], TimestampTz), s(&[Int4, Int4, Int4, Int4, Int4, Float8, Text], TimestampTz)],
            datetime::make_timestamptz,
        )
        .stable(),
        Def::new(
            "isfinite",
            vec![s(&[Date], Bool), s(&[Timestamp], Bool), s(&[TimestampTz], Bool), s(&[Interval], Bool)],
            datetime::isfinite,
        ),
        Def::new("justify_days", vec![s(&[Interval], Interval)], datetime::justify_days),
        Def::new("justify_hours", vec![s(&[Interval], Interval)], datetime::justify_hours),
        Def::new("justify_interval", vec![s(&[Interval], Interval)], datetime::justify_interval),
        Def::new("interval_hash", vec![s(&[Interval], Int4)], datetime::interval_hash),
        // Session and catalog information (stable, row at a time).
        Def::new("version", vec![s(&[], Text)], info).stable(),
        Def::new("current_database", vec![s(&[], Text)], info).alias(&["current_catalog"]).stable(),
        Def::new("current_schema", vec![s(&[], Text)], info).stable(),
        Def::new("current_schemas", vec![s(&[Bool], Text)], info).stable(),
        Def::new("current_user", vec![s(&[], Text)], info).alias(&["session_user", "user"]).stable(),
        Def::new("pg_backend_pid", vec![s(&[], Int4)], info).stable(),
        // pg_sleep(seconds): waits (cancel and statement_timeout still apply); void, shown empty.
        Def::new("pg_sleep", vec![s(&[Float8], Text)], info).volatile(),
        Def::new("inet_server_addr", vec![s(&[], Text)], info).stable(),
        Def::new("inet_server_port", vec![s(&[], Int4)], info).stable(),
        Def::new("pg_is_in_recovery", vec![s(&[], Bool)], info).stable(),
        Def::new("pg_typeof", vec![any(1, Text)], pg_typeof).lenient().stable(),
        Def::new("pg_get_userbyid", vec![any(1, Text)], info).stable(),
        Def::new("pg_encoding_to_char", vec![any(1, Text)], info).stable(),
        Def::new("current_setting", vec![s(&[Text], Text), s(&[Text, Bool], Text)], info).stable(),
        // set_config records the value in the statement's context; the
        // session applies it (is_local: until the block ends).
        Def::new("set_config", vec![s(&[Text, Text, Bool], Text)], info).volatile(),
        // pg_notify records (channel, payload) in the statement's context;
        // the session queues it in its transaction. Void, shown empty; not
        // strict (a NULL channel is an error, a NULL payload empty).
        Def::new("pg_notify", vec![s(&[Text, Text], Text)], info).volatile().lenient(),
        // Sequences (`SequenceAccess`): a sequence named by its text or OID.
        Def::new("nextval", vec![any(1, Int8)], info).volatile(),
        Def::new("currval", vec![any(1, Int8)], info).volatile(),
        Def::new("setval", vec![any(2, Int8), any(3, Int8)], info).volatile(),
        Def::new("lastval", vec![s(&[], Int8)], info).volatile(),
        Def::new("format_type", vec![any(2, Text)], info).lenient().stable(),
        Def::new("pg_size_pretty", vec![s(&[Int8], Text)], info),
        Def::new("obj_description", vec![any(1, Text), any(2, Text)], info).lenient().stable(),
        Def::new("col_description", vec![any(2, Text)], info).lenient().stable(),
        Def::new("shobj_description", vec![any(2, Text)], info).lenient().stable(),
        Def::new("pg_get_expr", vec![any(2, Text), any(3, Text)], info).lenient().stable(),
        Def::new("pg_get_indexdef", vec![any(1, Text), any(3, Text)], info).lenient().stable(),
        Def::new("pg_get_constraintdef", vec![any(1, Text), any(2, Text)], info).lenient().stable(),
        Def::new("pg_get_viewdef", vec![any(1, Text), any(2, Text)], info).lenient().stable(),
        Def::new("pg_get_statisticsobjdef_columns", vec![any(1, Text)], info).lenient().stable(),
        Def::new("array_to_string", vec![any(2, Text), any(3, Text)], info).lenient().stable(),
        Def::new("pg_relation_is_publishable", vec![any(1, Bool)], info).stable(),
        Def::new("pg_table_is_visible", vec![any(1, Bool)], info).stable(),
        // Every collation lives in pg_catalog. pg_get_serial_sequence is bound
        // from the catalog (planner/regtypes.rs); NULL here.
        Def::new("pg_collation_is_visible", vec![any(1, Bool)], info).stable(),
        // Every type and function lives in pg_catalog, which is always searched.
        Def::new("pg_type_is_visible", vec![any(1, Bool)], info).stable(),
        Def::new("pg_function_is_visible", vec![any(1, Bool)], info).stable(),
        Def::new("pg_get_serial_sequence", vec![any(2, Text)], info).lenient().stable(),
        Def::new("json_build_object", (0..=16).step_by(2).map(|n| any(n, Text)).collect(), info).lenient().stable(),
        // row_to_json(t.*) as the binder writes it: (name, value) pairs, compact.
        Def::new("row_to_json_fields", (0..=64).step_by(2).map(|n| any(n, Text)).collect(), info).lenient().stable(),
        Def::new("has_table_privilege", vec![any(2, Bool), any(3, Bool)], info).stable(),
        Def::new("has_schema_privilege", vec![any(2, Bool), any(3, Bool)], info).stable(),
        Def::new("has_database_privilege", vec![any(2, Bool), any(3, Bool)], info).stable(),
        Def::new("pg_total_relation_size", vec![any(1, Int8)], info).stable(),
        Def::new("pg_relation_size", vec![any(1, Int8), any(2, Int8)], info).stable(),
        Def::new("pg_database_size", vec![any(1, Int8)], info).stable(),
        // Arrays, carried as their text form ('{1,2}'): `array.rs`.
        Def::new("array_upper", vec![any(2, Int4)], array::dims).lenient(),
        Def::new("array_lower", vec![any(2, Int4)], array::dims).lenient(),
        Def::new("array_length", vec![any(2, Int4)], array::dims).lenient(),
        Def::new("array_ndims", vec![any(1, Int4)], array::dims).lenient(),
        Def::new("cardinality", vec![any(1, Int4)], array::dims).lenient(),
        Def::new(
            "string_to_array",
            vec![
                s(&[Text, Text], SqlType::Array(crate::types::Elem::Text)),
                s(&[Text, Text, Text], SqlType::Array(crate::types::Elem::Text)),
            ],
            array::string_to_array,
        ),
        Def::new("array_position", vec![any(2, Int4)], array::array_position).lenient(),
        Def::new("array_subscript", vec![s(&[Text, Int8], Unknown)], info).lenient(),
        // `a[k] := v` (INSERT targets with subscripts): the array with element k set.
        Def::new("array_assign", vec![s(&[Text, Int8, Text], Text)], info).lenient(),
        Def::new("array_any_eq", vec![s(&[Text, Text], Bool)], info).lenient(),
        Def::new("array_all_eq", vec![s(&[Text, Text], Bool)], info).lenient(),
    ];
    defs.into_iter().map(Def::done).collect()
}

/// The elements of a one-dimensional array in PostgreSQL's text form
/// (`{a,"b c",NULL}`): quoted elements unescaped, unquoted NULL as None.
fn array_elements(text: &str) -> Vec<Option<String>> {
    let inner = text.trim();
    let Some(inner) = inner.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return vec![Some(text.to_string())];
    };
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    if inner.trim().is_empty() {
        return out;
    }
    loop {
        let mut cur = String::new();
        let mut quoted = false;
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => cur.extend(chars.next()),
                    '"' => break,
                    c => cur.push(c),
                }
            }
        }
        while let Some(&c) = chars.peek() {
            if c == ',' {
                break;
            }
            chars.next();
            if c == '\\' {
                cur.extend(chars.next());
            } else {
                cur.push(c);
            }
        }
        let item = if quoted { cur } else { cur.trim().to_string() };
        out.push(if !quoted && item.eq_ignore_ascii_case("NULL") { None } else { Some(item) });
        if chars.next().is_none() {
            break;
        }
    }
    out
}

impl Signature {
    fn with_ret(mut self, ret: SqlType) -> Signature {
        self.ret = ret;
        self
    }
}

fn to_char_impl(a: &Args<'_>) -> Result<ArrayRef> {
    let fmt = a.str(1)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n * 16);
    let t = a.types[0];
    for i in 0..a.n {
        let Some(f) = fmt.get(i) else {
            b.append_null();
            continue;
        };
        let s = match a.value(0, i) {
            Value::Null => {
                b.append_null();
                continue;
            }
            // An infinite timestamp has no fields to show: NULL, as in PostgreSQL.
            Value::Timestamp(us) if us == i64::MAX || us == i64::MIN => {
                b.append_null();
                continue;
            }
            Value::Timestamp(us) => to_char::timestamp_to_char(us, t == SqlType::TimestampTz, f)?,
            Value::Interval(iv) => to_char::interval_to_char(iv, f)?,
            Value::Int(k) => num_format::int_to_char(k, t == SqlType::Int8, f)?,
            Value::Float(x) => num_format::float_to_char(x, t == SqlType::Float4, f)?,
            Value::Text(s) if t == SqlType::Numeric => num_format::numeric_to_char(&crate::types::numeric::Numeric::parse(&s)?, f)?,
            other => bail!(FeatureNotSupported, "to_char is not supported for {}", other.natural_type()),
        };
        b.append_value(s);
    }
    Ok(Arc::new(b.finish()))
}

fn to_number_impl(a: &Args<'_>) -> Result<ArrayRef> {
    let (text, fmt) = (a.str(0)?, a.str(1)?);
    let mut out = Vec::with_capacity(a.n);
    for i in 0..a.n {
        out.push(match (text.get(i), fmt.get(i)) {
            (Some(t), Some(f)) => num_format::to_number(t, f)?,
            _ => None,
        });
    }
    Ok(super::numeric::array(out))
}

fn pg_typeof(a: &Args<'_>) -> Result<ArrayRef> {
    let t = a.types[0];
    let name = if t == SqlType::Unknown { "unknown" } else { t.pg_name() };
    Ok(Arc::new(StringArray::from(vec![name; a.n])))
}

/// The session/catalog functions, row at a time (never hot).
fn info(a: &Args<'_>) -> Result<ArrayRef> {
    let name = a.name;
    let strict = registry().is_strict(name).unwrap_or(true);
    registry::rowwise(a, strict, |v, ctx| info_value(name, v, ctx))
}

fn as_s(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        other => Some(crate::types::format_value(other)),
    }
}

fn as_i(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => Some(*f as i64),
        Value::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn info_value(name: &str, a: &[Value], ctx: &ExecCtx) -> Result<Value> {
    let s0 = || a.first().and_then(as_s);
    Ok(match name {
        "version" => {
            Value::Text(format!("PostgreSQL 15.0 (weir {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit", env!("CARGO_PKG_VERSION")))
        }
        "current_database" => Value::Text(ctx.database.clone()),
        "current_schema" => Value::Text("public".into()),
        // The search path as a name[] in text form (implicit schemas first).
        "current_schemas" => match a.first() {
            Some(Value::Bool(true)) => Value::Text("{pg_catalog,public}".into()),
            Some(Value::Null) | None => Value::Null,
            _ => Value::Text("{public}".into()),
        },
        "current_user" => Value::Text(ctx.user.clone()),
        "pg_backend_pid" => Value::Int(ctx.pid as i64),
        "pg_sleep" => {
            let secs = match a.first() {
                Some(Value::Float(f)) => *f,
                Some(Value::Int(i)) => *i as f64,
                _ => 0.0,
            };
            let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e7));
            while std::time::Instant::now() < until {
                ctx.check()?;
                std::thread::sleep((until - std::time::Instant::now()).min(std::time::Duration::from_millis(10)));
            }
            Value::Null
        }
        "pg_get_userbyid" => Value::Text(ctx.user.clone()),
        "pg_get_statisticsobjdef_columns"
        | "obj_description"
        | "col_description"
        | "shobj_description"
        | "pg_get_indexdef"
        | "pg_get_constraintdef"
        | "pg_get_viewdef" => Value::Null,
        "array_to_string" => match (s0(), a.get(1).and_then(as_s)) {
            (Some(arr), Some(sep)) => {
                let null = a.get(2).and_then(as_s);
                let parts: Vec<String> = array_elements(&arr).into_iter().filter_map(|e| e.or_else(|| null.clone())).collect();
                Value::Text(parts.join(&sep))
            }
            _ => Value::Null,
        },
        "pg_get_expr" => a.first().cloned().unwrap_or(Value::Null),
        "array_subscript" => {
            let arr = s0().unwrap_or_default();
            let k = a.get(1).and_then(as_i).unwrap_or(0);
            // Arrays count from 1; vector types (int2vector, oidvector:
            // `1 2`, no braces) from 0, as in PostgreSQL.
            let lower = if arr.trim_start().starts_with('{') { 1 } else { 0 };
            let items = crate::exec::project_set::array_elements(&arr)?;
            match k.checked_sub(lower).and_then(|i| usize::try_from(i).ok()).and_then(|i| items.get(i)) {
                Some(Some(v)) => Value::Text(v.clone()),
                _ => Value::Null,
            }
        }
        "array_assign" => match a.get(1).and_then(as_i) {
            Some(k) => Value::Text(array::assign(s0().as_deref(), k, a.get(2).and_then(as_s))?),
            None => bail!(ArraySubscriptError, "array subscript in assignment must not be null"),
        },
        "array_any_eq" | "array_all_eq" => {
            let x = s0().unwrap_or_default();
            let arr = a.get(1).and_then(as_s).unwrap_or_default();
            let items: Vec<&str> = arr
                .trim_matches(|c| c == '{' || c == '}')
                .split(',')
                .map(|p| p.trim().trim_matches('"'))
                .filter(|p| !p.is_empty())
                .collect();
            if name == "array_any_eq" {
                Value::Bool(items.contains(&x.as_str()))
            } else {
                Value::Bool(items.iter().all(|i| *i == x))
            }
        }
        "pg_encoding_to_char" => Value::Text("UTF8".into()),
        // Recorded for the session to apply before the next statement
        // (current_setting is stable: folded at plan time, it does not see
        // a set_config of its own statement).
        "set_config" => {
            let name = s0().unwrap_or_default().to_ascii_lowercase();
            if !name.contains('.') && !ctx.settings.contains_key(&name) {
                bail!(UndefinedObject, "unrecognized configuration parameter \"{name}\"");
            }
            let value = a.get(1).and_then(as_s).unwrap_or_default();
            let local = matches!(a.get(2), Some(Value::Bool(true)));
            ctx.set_configs.lock().unwrap_or_else(|e| e.into_inner()).push((name, value.clone(), local));
            Value::Text(value)
        }
        "pg_notify" => {
            let channel = s0().unwrap_or_default();
            let payload = a.get(1).and_then(as_s).unwrap_or_default();
            crate::notify::check(&channel, &payload)?;
            ctx.notifies.lock().unwrap_or_else(|e| e.into_inner()).push((channel, payload));
            Value::Text(String::new())
        }
        "nextval" | "currval" | "setval" | "lastval" => {
            let Some(seqs) = ctx.sequences.as_ref() else {
                bail!(FeatureNotSupported, "{name} is not available here");
            };
            let seq = a.first().cloned().unwrap_or(Value::Null);
            let v = match name {
                "nextval" => seqs.nextval(&ctx.database, &seq)?,
                "currval" => seqs.currval(&ctx.database, &seq)?,
                "lastval" => seqs.lastval()?,
                _ => {
                    let value =
                        a.get(1).and_then(as_i).ok_or_else(|| crate::err!(InvalidParameterValue, "setval needs an integer value"))?;
                    let called = !matches!(a.get(2), Some(Value::Bool(false)));
                    seqs.setval(&ctx.database, &seq, value, called)?
                }
            };
            Value::Int(v)
        }
        "pg_collation_is_visible" | "pg_type_is_visible" | "pg_function_is_visible" => Value::Bool(true),
        "pg_get_serial_sequence" => Value::Null,
        "json_build_object" | "row_to_json_fields" => {
            let json = |v: &Value| match v {
                Value::Null => "null".to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Int(i) => i.to_string(),
                Value::Float(f) if f.is_finite() => crate::types::format_value(v),
                other => {
                    let s = as_s(other).unwrap_or_default();
                    let mut out = String::from("\"");
                    for c in s.chars() {
                        match c {
                            '"' => out.push_str("\\\""),
                            '\\' => out.push_str("\\\\"),
                            '\n' => out.push_str("\\n"),
                            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                            c => out.push(c),
                        }
                    }
                    out.push('"');
                    out
                }
            };
            // json_build_object spaces its pairs, row_to_json does not.
            let (colon, comma) = if name == "json_build_object" { (" : ", ", ") } else { (":", ",") };
            let pairs: Vec<String> =
                a.chunks(2).map(|kv| format!("\"{}\"{colon}{}", as_s(&kv[0]).unwrap_or_default(), json(&kv[1]))).collect();
            Value::Text(format!("{{{}}}", pairs.join(comma)))
        }
        "format_type" => match a.first() {
            None | Some(Value::Null) => Value::Null,
            Some(v) => Value::Text(crate::types::pg_type_name(as_i(v).unwrap_or(0) as u32).to_string()),
        },
        "current_setting" => {
            let name = s0().unwrap_or_default().to_ascii_lowercase();
            let set =
                ctx.set_configs.lock().unwrap_or_else(|e| e.into_inner()).iter().rev().find(|(n, _, _)| *n == name).map(|c| c.1.clone());
            Value::Text(set.or_else(|| ctx.settings.get(&name).cloned()).unwrap_or_default())
        }
        "pg_table_is_visible" | "has_table_privilege" | "has_schema_privilege" | "has_database_privilege" => Value::Bool(true),
        "pg_is_in_recovery" | "pg_relation_is_publishable" => Value::Bool(false),
        "pg_total_relation_size" | "pg_relation_size" | "pg_database_size" => Value::Int(0),
        "pg_size_pretty" => Value::Text(format!("{} bytes", a.first().and_then(as_i).unwrap_or(0))),
        // The connection's local address; NULL without a socket, as
        // PostgreSQL answers over a Unix socket.
        "inet_server_addr" => match ctx.activity.get(ctx.pid).and_then(|r| r.server_addr) {
            Some(a) => Value::Text(a.ip().to_string()),
            None => Value::Null,
        },
        "inet_server_port" => match ctx.activity.get(ctx.pid).and_then(|r| r.server_addr) {
            Some(a) => Value::Int(a.port() as i64),
            None => Value::Null,
        },
        other => bail!(UndefinedFunction, "function {other} does not exist"),
    })
}

/// Evaluate a function call over a batch. Conditional expressions
/// (coalesce, nullif, greatest, least) are evaluated here; everything
/// else goes through the registry.
pub fn eval_function(name: &str, args: &[Expr], ty: SqlType, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    let n = batch.num_rows();
    if name.starts_with("srf:") {
        // The planner moves set-returning calls of a select list into a
        // ProjectSet; anywhere else they are not supported.
        crate::bail!(FeatureNotSupported, "set-returning functions are not allowed here");
    }
    // `x op ANY (arr)` / `x op ALL (arr)`, bound as `array_any:<op>`.
    if let Some((q @ ("array_any" | "array_all"), sym)) = name.split_once(':') {
        let op = array::quantified_op(sym).ok_or_else(|| crate::err!(Internal, "no quantified operator {sym}"))?;
        let x = args[0].eval(batch, ctx)?;
        let arr = args[1].eval(batch, ctx)?;
        return array::quantified(&x, args[0].ty(), &arr, op, q == "array_all", n);
    }
    // `a op b` over two arrays, bound as `array_cmp:<op>`.
    if let Some(("array_cmp", sym)) = name.split_once(':') {
        let op = array::quantified_op(sym).ok_or_else(|| crate::err!(Internal, "no array comparison {sym}"))?;
        let l = args[0].eval(batch, ctx)?;
        let r = args[1].eval(batch, ctx)?;
        let ety = args[0].ty().elem().or(args[1].ty().elem()).unwrap_or(SqlType::Text);
        return array::compare(&l, &r, ety, op, n);
    }
    // A PL/pgSQL function, row by row through the session (`RoutineAccess`).
    if let Some(key) = name.strip_prefix("plpgsql:") {
        let routines = ctx.routines.as_ref().ok_or_else(|| crate::err!(FeatureNotSupported, "PL/pgSQL functions cannot run here"))?;
        let cols: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
        let mut out: Vec<ArrayRef> = Vec::with_capacity(n);
        for i in 0..n {
            ctx.check()?;
            let row = cols.iter().zip(args).map(|(c, a)| (c.slice(if c.len() == 1 { 0 } else { i }, 1), a.ty())).collect();
            out.push(routines.call(ctx, key, row, ty)?);
        }
        if out.is_empty() {
            return Ok(arrow::array::new_empty_array(&ty.to_arrow()));
        }
        let parts: Vec<&dyn arrow::array::Array> = out.iter().map(|a| a.as_ref()).collect();
        return Ok(arrow::compute::concat(&parts)?);
    }
    match name {
        // ARRAY[...]: the array's text form, `{a,"b c",NULL}`.
        "array_text" => {
            let cols: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
            let ety = ty.elem().unwrap_or(SqlType::Text);
            let out: arrow::array::StringArray = (0..n)
                .map(|i| {
                    let items: Vec<Option<String>> =
                        cols.iter().map(|c| crate::types::array::elem_text(&crate::types::value_at(c.as_ref(), i), ety)).collect();
                    Some(crate::types::array::format_array(&items))
                })
                .collect();
            return Ok(Arc::new(out));
        }
        "array_slice" => {
            let cols: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
            return array::slice(&cols[0], &cols[1], &cols[2], n);
        }
        // Bound by the planner with the array type as `ty`.
        "array_append" | "array_prepend" | "array_cat" | "array_remove" | "array_replace" => {
            let cols: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
            return array::edit(name, &cols, ty.elem().unwrap_or(SqlType::Text), n);
        }
        // A domain's constraint over a value cast to it (`planner/user_type.rs`):
        // domain_check(value, ok, kind, message) is the value where ok is
        // not false; kind 0 is NOT NULL (23502), 1 a CHECK (23514), 2 an
        // enum's labels (22P02).
        "domain_check" => {
            let v = args[0].eval(batch, ctx)?;
            let ok = args[1].eval(batch, ctx)?;
            let failed = match ok.as_any().downcast_ref::<BooleanArray>() {
                Some(b) => (0..b.len()).any(|i| b.is_valid(i) && !b.value(i)),
                None => false,
            };
            if failed {
                let lit = |k: usize| args.get(k).map(|a| a.eval(batch, ctx)).transpose();
                let kind = lit(2)?.map(|a| value_at(a.as_ref(), 0));
                let msg = match lit(3)?.map(|a| value_at(a.as_ref(), 0)) {
                    Some(Value::Text(m)) => m,
                    _ => "value violates a domain constraint".to_string(),
                };
                return Err(match kind {
                    Some(Value::Int(0)) => crate::err!(NotNullViolation, "{msg}"),
                    // An enum's label: the first value that is none.
                    Some(Value::Int(2)) => {
                        let b = ok.as_any().downcast_ref::<BooleanArray>().expect("checked boolean");
                        let bad = (0..b.len()).find(|&i| b.is_valid(i) && !b.value(i)).map(|i| value_at(v.as_ref(), i));
                        let shown = match bad {
                            Some(Value::Text(t)) => t,
                            _ => String::new(),
                        };
                        crate::err!(InvalidText, "{msg}: \"{shown}\"")
                    }
                    _ => crate::err!(CheckViolation, "{msg}"),
                });
            }
            return Ok(v);
        }
        // A record's text form from its fields (set-returning calls' records).
        "record_out" => {
            let cols: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
            let out: arrow::array::StringArray = (0..n)
                .map(|i| {
                    let fields: Vec<Option<String>> = cols
                        .iter()
                        .map(|c| match crate::types::value_at(c.as_ref(), i) {
                            Value::Null => None,
                            v => Some(crate::types::format_value(&v)),
                        })
                        .collect();
                    Some(crate::exec::project_set::record_out(&fields))
                })
                .collect();
            return Ok(Arc::new(out));
        }
        // Field k (a constant) of a record's text form, cast to the field's type.
        "record_field" => {
            let rec = args[0].eval(batch, ctx)?;
            let k = match args.get(1).map(|a| a.eval(batch, ctx)).transpose()? {
                Some(a) if a.len() > 0 => match crate::types::value_at(a.as_ref(), 0) {
                    Value::Int(k) => k as usize,
                    _ => 0,
                },
                _ => 0,
            };
            let mut out: Vec<Option<String>> = Vec::with_capacity(n);
            for i in 0..n {
                out.push(match crate::types::value_at(rec.as_ref(), i) {
                    Value::Text(s) => crate::exec::project_set::record_in(&s)?.into_iter().nth(k).flatten(),
                    _ => None,
                });
            }
            let text: ArrayRef = Arc::new(arrow::array::StringArray::from(out));
            let target = if ty == SqlType::Unknown { SqlType::Text } else { ty };
            return cast_array(&text, SqlType::Text, target);
        }
        "coalesce" => {
            let mut result = new_null_array(&ty.to_arrow(), n);
            for a in args.iter().rev() {
                let v = cast_array(&a.eval(batch, ctx)?, a.ty(), ty)?;
                let mask = arrow::compute::is_not_null(&v)?;
                result = arrow::compute::kernels::zip::zip(&mask, &v, &result)?;
            }
            return Ok(result);
        }
        "nullif" => {
            let l = args[0].eval(batch, ctx)?;
            let r = cast_array(&args[1].eval(batch, ctx)?, args[1].ty(), args[0].ty())?;
            let eq = super::expr::binary_arrays(super::expr::BinOp::Eq, &l, &r, args[0].ty(), SqlType::Bool)?;
            let eq = eq.as_boolean();
            let eq: BooleanArray = eq.iter().map(|v| Some(v == Some(true))).collect();
            return Ok(arrow::compute::kernels::nullif::nullif(l.as_ref(), &eq)?);
        }
        "greatest" | "least" => {
            let cast: Vec<ArrayRef> = args.iter().map(|e| cast_array(&e.eval(batch, ctx)?, e.ty(), ty)).collect::<Result<_>>()?;
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let mut best = Value::Null;
                for a in &cast {
                    let v = value_at(a.as_ref(), i);
                    if v.is_null() {
                        continue;
                    }
                    let o = v.cmp_as(&best, ty);
                    if best.is_null() || (name == "greatest" && o.is_gt()) || (name == "least" && o.is_lt()) {
                        best = v;
                    }
                }
                out.push(best);
            }
            return crate::types::values_to_array(&out, ty);
        }
        _ => {}
    }
    let mut cols = Vec::with_capacity(args.len());
    let mut scalar = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Expr::Literal { value, ty } => {
                cols.push(crate::types::values_to_array(std::slice::from_ref(value), *ty)?);
                scalar.push(true);
            }
            other => {
                cols.push(other.eval(batch, ctx)?);
                scalar.push(false);
            }
        }
        types.push(a.ty());
    }
    registry::invoke(name, cols, scalar, types, ty, n, ctx)
}

/// The result type of a resolved call (for callers that build calls
/// directly, such as EXTRACT): the registry's signature result.
pub fn function_type(name: &str, args: &[SqlType]) -> Option<SqlType> {
    registry().resolve(name, args).ok().map(|r| r.ret)
}
