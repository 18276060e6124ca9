//! Array functions over arrays in their text form (`types::array`):
//! dimensions (`array_length`, `cardinality`, …), `string_to_array`,
//! `array_position`, and the evaluated forms the binder produces for
//! subscripts, slices and `op ANY / ALL (array)`.
//!
//! Catalog columns of PostgreSQL's vector types (int2vector, oidvector:
//! `1 2`, counted from 0) reach these functions as text too; they keep
//! their old reading.

use std::sync::Arc;

use arrow::array::*;

use super::registry::{rowwise, Args};
use crate::error::Result;
use crate::exec::expr::{parse_text_as, BinOp};
use crate::types::array::{format_array, parse_array};
use crate::types::{SqlType, Value};

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        other => Some(crate::types::format_value(other)),
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => Some(*f as i64),
        Value::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An array value's elements, or a vector type's (`1 2`) with lower
/// bound 0.
fn elements(s: &str) -> Result<(Vec<Option<String>>, i64)> {
    if s.trim_start().starts_with(['{', '[']) {
        Ok((parse_array(s)?, 1))
    } else {
        Ok((s.split_whitespace().map(|x| Some(x.to_string())).collect(), 0))
    }
}

/// array_length, array_upper, array_lower, array_ndims, cardinality.
pub fn dims(a: &Args<'_>) -> Result<ArrayRef> {
    let name = a.name;
    rowwise(a, true, |v, _| {
        let Some(s) = text(&v[0]) else { return Ok(Value::Null) };
        let (items, lower) = elements(&s)?;
        let n = items.len() as i64;
        if name == "cardinality" {
            return Ok(Value::Int(n));
        }
        // One dimension: any other asked for has no bounds; an empty
        // array has no dimensions at all.
        if n == 0 || (name != "array_ndims" && v.get(1).and_then(int) != Some(1)) {
            return Ok(Value::Null);
        }
        Ok(Value::Int(match name {
            "array_length" => n,
            "array_lower" => lower,
            "array_ndims" => 1,
            _ => lower + n - 1,
        }))
    })
}

/// string_to_array(text, delimiter [, null string]) → text[].
pub fn string_to_array(a: &Args<'_>) -> Result<ArrayRef> {
    rowwise(a, false, |v, _| {
        let Some(s) = text(&v[0]) else { return Ok(Value::Null) };
        let null = v.get(2).and_then(text);
        let parts: Vec<String> = match text(&v[1]) {
            // A NULL delimiter splits into characters; an empty one keeps
            // the string whole.
            None => s.chars().map(String::from).collect(),
            Some(d) if d.is_empty() => vec![s.clone()],
            Some(d) => s.split(d.as_str()).map(String::from).collect(),
        };
        if s.is_empty() {
            return Ok(Value::Text("{}".into()));
        }
        let items: Vec<Option<String>> =
            parts.into_iter().map(|p| if null.as_deref() == Some(p.as_str()) { None } else { Some(p) }).collect();
        Ok(Value::Text(format_array(&items)))
    })
}

/// array_position(array, value): the first subscript holding the value.
pub fn array_position(a: &Args<'_>) -> Result<ArrayRef> {
    let ety = a.types[0].elem().unwrap_or(SqlType::Text);
    rowwise(a, false, |v, _| {
        let Some(s) = text(&v[0]) else { return Ok(Value::Null) };
        let (items, lower) = elements(&s)?;
        let want = match &v[1] {
            Value::Null => None,
            x => Some(parse_text_as(&text(x).unwrap_or_default(), ety)?),
        };
        for (i, item) in items.iter().enumerate() {
            let hit = match (item, &want) {
                (None, None) => true,
                (Some(t), Some(w)) => parse_text_as(t, ety)?.cmp_as(w, ety).is_eq(),
                _ => false,
            };
            if hit {
                return Ok(Value::Int(lower + i as i64));
            }
        }
        Ok(Value::Null)
    })
}

/// `arr[lo:hi]`: a slice (missing bounds are the array's own), an empty
/// array when it selects nothing.
pub fn slice(arr: &ArrayRef, lo: &ArrayRef, hi: &ArrayRef, n: usize) -> Result<ArrayRef> {
    let at = |c: &ArrayRef, i: usize| crate::types::value_at(c.as_ref(), if c.len() == 1 { 0 } else { i });
    let mut out: Vec<Option<String>> = Vec::with_capacity(n);
    for i in 0..n {
        let Some(s) = text(&at(arr, i)) else {
            out.push(None);
            continue;
        };
        let (items, lower) = elements(&s)?;
        let upper = lower + items.len() as i64 - 1;
        let lo = int(&at(lo, i)).unwrap_or(lower).max(lower);
        let hi = int(&at(hi, i)).unwrap_or(upper).min(upper);
        let picked: Vec<Option<String>> = if lo > hi { vec![] } else { items[(lo - lower) as usize..=(hi - lower) as usize].to_vec() };
        out.push(Some(format_array(&picked)));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// `x op ANY (arr)` / `x op ALL (arr)`, PostgreSQL's three-valued answer:
/// ANY is true when one comparison is, else NULL when one is unknown;
/// ALL is false when one comparison is, else NULL when one is unknown.
pub fn quantified(x: &ArrayRef, xty: SqlType, arr: &ArrayRef, op: BinOp, all: bool, n: usize) -> Result<ArrayRef> {
    let at = |c: &ArrayRef, i: usize| crate::types::value_at(c.as_ref(), if c.len() == 1 { 0 } else { i });
    let mut out: Vec<Option<bool>> = Vec::with_capacity(n);
    for i in 0..n {
        let Some(s) = text(&at(arr, i)) else {
            out.push(None);
            continue;
        };
        let (items, _) = elements(&s)?;
        let xv = at(x, i);
        let mut unknown = false;
        let mut decided = None;
        for item in &items {
            let r = match (item, xv.is_null()) {
                (Some(t), false) => {
                    let e = parse_text_as(t, xty)?;
                    op.holds(xv.cmp_as(&e, xty))
                }
                _ => None,
            };
            match r {
                None => unknown = true,
                Some(b) if b != all => {
                    decided = Some(b);
                    break;
                }
                Some(_) => {}
            }
        }
        out.push(match decided {
            Some(b) => Some(b),
            None if unknown => None,
            None => Some(all),
        });
    }
    Ok(Arc::new(BooleanArray::from(out)))
}

/// PostgreSQL's `btarraycmp` over two arrays' elements of type `ety`:
/// element by element, a NULL element after every value (two NULLs are
/// equal), then the shorter array first.
pub fn array_order(a: &[Option<String>], b: &[Option<String>], ety: SqlType) -> Result<std::cmp::Ordering> {
    use std::cmp::Ordering;
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => parse_text_as(x, ety)?.cmp_as(&parse_text_as(y, ety)?, ety),
        };
        if o.is_ne() {
            return Ok(o);
        }
    }
    Ok(a.len().cmp(&b.len()))
}

/// `a op b` for two arrays (NULL when either is NULL).
pub fn compare(l: &ArrayRef, r: &ArrayRef, ety: SqlType, op: BinOp, n: usize) -> Result<ArrayRef> {
    let at = |c: &ArrayRef, i: usize| crate::types::value_at(c.as_ref(), if c.len() == 1 { 0 } else { i });
    let mut out: Vec<Option<bool>> = Vec::with_capacity(n);
    for i in 0..n {
        let (Some(a), Some(b)) = (text(&at(l, i)), text(&at(r, i))) else {
            out.push(None);
            continue;
        };
        let o = array_order(&elements(&a)?.0, &elements(&b)?.0, ety)?;
        out.push(op.holds(o));
    }
    Ok(Arc::new(BooleanArray::from(out)))
}

/// array_append, array_prepend, array_cat, array_remove and array_replace
/// over evaluated arguments (`ety`: the element type). NULL arrays count as
/// empty where PostgreSQL does (append, prepend, cat); elements compare as
/// values of their type (remove, replace), NULL matching NULL.
pub fn edit(name: &str, cols: &[ArrayRef], ety: SqlType, n: usize) -> Result<ArrayRef> {
    let at = |c: &ArrayRef, i: usize| crate::types::value_at(c.as_ref(), if c.len() == 1 { 0 } else { i });
    let items_of = |v: &Value| -> Result<Option<Vec<Option<String>>>> {
        match text(v) {
            None => Ok(None),
            Some(s) => Ok(Some(elements(&s)?.0)),
        }
    };
    let same = |item: &Option<String>, v: &Value| -> Result<bool> {
        Ok(match (item, v) {
            (None, Value::Null) => true,
            (Some(t), v) if !v.is_null() => parse_text_as(t, ety)?.cmp_as(v, ety).is_eq(),
            _ => false,
        })
    };
    let mut out: Vec<Option<String>> = Vec::with_capacity(n);
    for i in 0..n {
        let v: Vec<Value> = cols.iter().map(|c| at(c, i)).collect();
        let result = match name {
            "array_append" => {
                let mut items = items_of(&v[0])?.unwrap_or_default();
                items.push(crate::types::array::elem_text(&v[1], ety));
                Some(items)
            }
            "array_prepend" => {
                let mut items = vec![crate::types::array::elem_text(&v[0], ety)];
                items.extend(items_of(&v[1])?.unwrap_or_default());
                Some(items)
            }
            "array_cat" => match (items_of(&v[0])?, items_of(&v[1])?) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or_default().into_iter().chain(b.unwrap_or_default()).collect()),
            },
            "array_remove" => match items_of(&v[0])? {
                None => None,
                Some(items) => {
                    let mut kept = Vec::with_capacity(items.len());
                    for it in items {
                        if !same(&it, &v[1])? {
                            kept.push(it);
                        }
                    }
                    Some(kept)
                }
            },
            "array_replace" => match items_of(&v[0])? {
                None => None,
                Some(items) => {
                    let with = crate::types::array::elem_text(&v[2], ety);
                    let mut outv = Vec::with_capacity(items.len());
                    for it in items {
                        outv.push(if same(&it, &v[1])? { with.clone() } else { it });
                    }
                    Some(outv)
                }
            },
            other => crate::bail!(Internal, "no array function {other}"),
        };
        out.push(result.map(|items| format_array(&items)));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// The comparison operator of a quantified call's name (`array_any:<=`).
pub fn quantified_op(symbol: &str) -> Option<BinOp> {
    Some(match symbol {
        "=" => BinOp::Eq,
        "<>" => BinOp::NotEq,
        "<" => BinOp::Lt,
        "<=" => BinOp::LtEq,
        ">" => BinOp::Gt,
        ">=" => BinOp::GtEq,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }

    #[test]
    fn any_and_all_are_three_valued() {
        let x: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(5), None, Some(2)]));
        let arr = strings(&[Some("{1,2}"), Some("{1,NULL}"), Some("{1}"), Some("{}")]);
        let any = quantified(&x, SqlType::Int4, &arr, BinOp::Eq, false, 4).unwrap();
        let any: Vec<Option<bool>> = any.as_boolean().iter().collect();
        assert_eq!(any, vec![Some(true), None, None, Some(false)]);
        let all = quantified(&x, SqlType::Int4, &arr, BinOp::Lt, true, 4).unwrap();
        let all: Vec<Option<bool>> = all.as_boolean().iter().collect();
        assert_eq!(all, vec![Some(false), Some(false), None, Some(true)]);
    }

    #[test]
    fn edits_follow_postgresql() {
        let arr = strings(&[Some("{1,2,1,NULL}"), None]);
        let one: ArrayRef = Arc::new(Int32Array::from(vec![Some(1)]));
        let nine: ArrayRef = Arc::new(Int32Array::from(vec![Some(9)]));
        let null: ArrayRef = Arc::new(Int32Array::from(vec![None::<i32>]));
        let got = |name: &str, cols: &[ArrayRef]| -> Vec<Option<String>> {
            edit(name, cols, SqlType::Int4, 2).unwrap().as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect()
        };
        assert_eq!(got("array_append", &[arr.clone(), nine.clone()]), vec![Some("{1,2,1,NULL,9}".into()), Some("{9}".into())]);
        assert_eq!(got("array_prepend", &[nine.clone(), arr.clone()]), vec![Some("{9,1,2,1,NULL}".into()), Some("{9}".into())]);
        assert_eq!(got("array_cat", &[arr.clone(), arr.clone()]), vec![Some("{1,2,1,NULL,1,2,1,NULL}".into()), None]);
        assert_eq!(got("array_remove", &[arr.clone(), one.clone()]), vec![Some("{2,NULL}".into()), None]);
        assert_eq!(got("array_remove", &[arr.clone(), null.clone()]), vec![Some("{1,2,1}".into()), None]);
        assert_eq!(got("array_replace", &[arr.clone(), one, nine]), vec![Some("{9,2,9,NULL}".into()), None]);
    }

    #[test]
    fn slices() {
        let arr = strings(&[Some("{a,b,c,d}"), Some("{a}"), None]);
        let lo: ArrayRef = Arc::new(Int64Array::from(vec![Some(2)]));
        let hi: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>]));
        let s = slice(&arr, &lo, &hi, 3).unwrap();
        let s: Vec<Option<&str>> = s.as_string::<i32>().iter().collect();
        assert_eq!(s, vec![Some("{b,c,d}"), Some("{}"), None]);
    }
}

/// `arr[k] := v` on an array's text form (one dimension): a NULL array becomes
/// one holding just element k (lower bound k, as PostgreSQL makes it), a
/// subscript past either end extends the array with NULLs.
pub fn assign(arr: Option<&str>, k: i64, v: Option<String>) -> Result<String> {
    let (mut lower, mut items) = match arr {
        None => (k, Vec::new()),
        Some(s) => {
            let t = s.trim();
            // An explicit lower bound, `[2:3]={a,b}`.
            let lower = match (t.strip_prefix('['), t.find(':')) {
                (Some(rest), Some(_)) => rest.split(':').next().and_then(|x| x.trim().parse::<i64>().ok()).unwrap_or(1),
                _ => 1,
            };
            let items = parse_array(t)?;
            (if items.is_empty() { k } else { lower }, items)
        }
    };
    if k < lower {
        let pad = usize::try_from(lower - k).map_err(|_| crate::err!(ProgramLimitExceeded, "array size exceeds the maximum allowed"))?;
        if pad > 1 << 20 {
            crate::bail!(ProgramLimitExceeded, "array size exceeds the maximum allowed");
        }
        let mut v2 = vec![None; pad];
        v2.append(&mut items);
        items = v2;
        lower = k;
    }
    let i = usize::try_from(k - lower).map_err(|_| crate::err!(ProgramLimitExceeded, "array size exceeds the maximum allowed"))?;
    if i > items.len() + (1 << 20) {
        crate::bail!(ProgramLimitExceeded, "array size exceeds the maximum allowed");
    }
    if i >= items.len() {
        items.resize(i + 1, None);
    }
    items[i] = v;
    let body = format_array(&items);
    Ok(if lower == 1 { body } else { format!("[{lower}:{}]={body}", lower + items.len() as i64 - 1) })
}

#[cfg(test)]
mod assign_tests {
    use super::assign;

    #[test]
    fn assign_sets_and_extends() {
        assert_eq!(assign(None, 1, Some("a".into())).unwrap(), "{a}");
        assert_eq!(assign(Some("{a}"), 2, Some("b c".into())).unwrap(), "{a,\"b c\"}");
        assert_eq!(assign(Some("{a}"), 3, None).unwrap(), "{a,NULL,NULL}");
        assert_eq!(assign(None, 2, Some("x".into())).unwrap(), "[2:2]={x}");
        assert_eq!(assign(Some("[2:2]={x}"), 1, Some("w".into())).unwrap(), "{w,x}");
    }
}
