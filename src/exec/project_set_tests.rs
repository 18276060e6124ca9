//! `ProjectSetExecutor`: lockstep sets padded with NULL, empty sets, output
//! split across batches; the array and record text forms.

use super::{array_elements, record_in, record_out, ProjectSetExecutor};
use crate::exec::expr::Expr;
use crate::exec::mock::{ctx, MockExecutor, Step};
use crate::exec::plan::{PlanColumn, SrfCall, SrfKind};
use crate::exec::BatchExecutor;
use crate::types::{value_at, SqlType, Value};

fn col(i: usize, ty: SqlType) -> Expr {
    Expr::Column { index: i, ty }
}

fn rows(e: &mut dyn BatchExecutor, max: usize) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    loop {
        let r = e.next_batch(max).unwrap();
        assert!(r.batch.num_rows() <= max);
        let drained = r.is_drained;
        let b = r.into_dense().unwrap();
        for i in 0..b.num_rows() {
            out.push(b.columns().iter().map(|c| value_at(c.as_ref(), i)).collect());
        }
        if drained {
            return out;
        }
    }
}

#[test]
fn lockstep_with_null_padding_and_empty_sets() {
    let input = vec![PlanColumn::new("id", SqlType::Int8), PlanColumn::new("arr", SqlType::Text)];
    // Row 0 is not live.
    let step = Step::live(
        vec![
            vec![Value::Int(9), Value::Text("{x}".into())],
            vec![Value::Int(1), Value::Text("{a,b,c}".into())],
            vec![Value::Int(2), Value::Text("{}".into())],
            vec![Value::Int(3), Value::Null],
        ],
        vec![1, 2, 3],
    );
    let srfs = vec![
        SrfCall {
            kind: SrfKind::GenerateSeries,
            args: vec![Expr::lit(Value::Int(1), SqlType::Int8), col(0, SqlType::Int8)],
            out: vec![("generate_series".into(), SqlType::Int8)],
        },
        SrfCall { kind: SrfKind::Unnest, args: vec![col(1, SqlType::Text)], out: vec![("unnest".into(), SqlType::Text)] },
    ];
    let mut cols = input.clone();
    cols.push(PlanColumn::new("generate_series", SqlType::Int8));
    cols.push(PlanColumn::new("unnest", SqlType::Text));
    let child = MockExecutor::new(&input, vec![step]);
    let mut e = ProjectSetExecutor::new(Box::new(child), srfs, &cols, ctx());
    let got = rows(&mut e, 2);
    let t = |s: &str| Value::Text(s.into());
    assert_eq!(
        got,
        vec![
            vec![Value::Int(1), t("{a,b,c}"), Value::Int(1), t("a")],
            vec![Value::Int(1), t("{a,b,c}"), Value::Null, t("b")],
            vec![Value::Int(1), t("{a,b,c}"), Value::Null, t("c")],
            vec![Value::Int(2), t("{}"), Value::Int(1), Value::Null],
            vec![Value::Int(2), t("{}"), Value::Int(2), Value::Null],
            vec![Value::Int(3), Value::Null, Value::Int(1), Value::Null],
            vec![Value::Int(3), Value::Null, Value::Int(2), Value::Null],
            vec![Value::Int(3), Value::Null, Value::Int(3), Value::Null],
        ]
    );
}

#[test]
fn array_and_record_text_forms() {
    let s = |x: &str| Some(x.to_string());
    assert_eq!(array_elements("{1,2,3}").unwrap(), vec![s("1"), s("2"), s("3")]);
    assert_eq!(array_elements("1 3").unwrap(), vec![s("1"), s("3")]);
    assert_eq!(array_elements(r#"{"a,b",NULL,"NULL",""}"#).unwrap(), vec![s("a,b"), None, s("NULL"), s("")]);
    assert_eq!(array_elements("{{1,2},{3,4}}").unwrap(), vec![s("1"), s("2"), s("3"), s("4")]);
    assert_eq!(array_elements("{}").unwrap(), Vec::<Option<String>>::new());
    assert!(array_elements("{1,2").is_err());
    let rec = record_out(&[s("5"), None, s("a b"), s("q\"")]);
    assert_eq!(rec, r#"(5,,"a b","q""")"#);
    assert_eq!(record_in(&rec).unwrap(), vec![s("5"), None, s("a b"), s("q\"")]);
    assert!(record_in("5,1").is_err());
}
