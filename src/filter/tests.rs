//! SQL92 selectors: what parses, what is refused and why, and what matches, against the Java
//! broker's rules (spec: `SelectorParser.jj`, `ComparisonExpression`, `LogicExpression`).
//!
//! May import: nothing outside `filter/` (the area's rule: docs/architecture.md).

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn eval_with<'a>(f: &'a SqlFilter, p: &'a HashMap<String, String>) -> Result<Value<'a>, EvalError> {
    f.evaluate(|k| p.get(k).map(String::as_str))
}

/// Compiles `sql` (it must parse) and evaluates it over `pairs`.
fn value(sql: &str, pairs: &[(&str, &str)]) -> Result<String, EvalError> {
    let f = SqlFilter::compile(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let p = props(pairs);
    eval_with(&f, &p).map(|v| match v {
        Value::Null => "NULL".to_owned(),
        Value::Bool(b) => b.to_string().to_uppercase(),
        other => format!("{other:?}"),
    })
}

fn matches(sql: &str, pairs: &[(&str, &str)]) -> bool {
    let f = SqlFilter::compile(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let p = props(pairs);
    f.matches(|k| p.get(k).map(String::as_str))
}

fn refused(sql: &str) -> SqlError {
    match SqlFilter::compile(sql) {
        Ok(f) => panic!("{sql} parsed as {:?}", f.expr()),
        Err(e) => e,
    }
}

#[test]
fn every_operator_on_present_properties() {
    let p = [("a", "5"), ("s", "hello"), ("TAGS", "TagA"), ("d", "2.5")];
    for (sql, want) in [
        ("a = 5", true),
        ("a <> 5", false),
        ("a > 4", true),
        ("a >= 5", true),
        ("a < 5", false),
        ("a <= 5", true),
        ("a BETWEEN 1 AND 5", true),
        ("a NOT BETWEEN 1 AND 5", false),
        ("a BETWEEN 6 AND 9", false),
        ("s = 'hello'", true),
        ("s <> 'hello'", false),
        ("s IN ('x', 'hello')", true),
        ("s NOT IN ('x', 'hello')", false),
        ("TAGS IN ('TagA')", true),
        ("s IS NULL", false),
        ("s IS NOT NULL", true),
        ("missing IS NULL", true),
        ("s CONTAINS 'ell'", true),
        ("s NOT CONTAINS 'ell'", false),
        ("s STARTSWITH 'he'", true),
        ("s ENDSWITH 'lo'", true),
        ("s NOT ENDSWITH 'lo'", false),
        ("d > 2.4", true),
        ("d < 2.5e0", false),
        ("a > 4 AND s = 'hello'", true),
        ("a > 9 OR s = 'hello'", true),
        ("NOT (a > 9)", true),
        ("(a = 5) = TRUE", true),
        ("a > 3000000000", false),
        ("a > -1", true),
        ("a > - -4", true),
        ("a = +5", true),
        ("TRUE", true),
        ("FALSE", false),
    ] {
        assert_eq!(matches(sql, &p), want, "{sql}");
    }
}

#[test]
fn keywords_are_case_insensitive_and_properties_case_sensitive() {
    let p = [("a", "1"), ("A", "2")];
    assert!(matches("a = 1 and A = 2 oR a iS nOt NuLl", &p));
    assert!(matches("a between 0 AnD 1", &p));
    assert!(!matches("a = 2", &p));
}

#[test]
fn three_valued_logic_for_missing_properties() {
    for (sql, want) in [
        ("x > 1", "NULL"),
        ("x = 1", "NULL"),
        ("1 = x", "FALSE"),
        ("x <> 1", "NULL"),
        ("x = y", "TRUE"),
        ("x IN ('a')", "NULL"),
        ("x NOT IN ('a')", "NULL"),
        ("x CONTAINS 'a'", "FALSE"),
        ("x NOT CONTAINS 'a'", "FALSE"),
        ("x BETWEEN 1 AND 2", "NULL"),
        ("x NOT BETWEEN 1 AND 2", "NULL"),
        ("NOT (x > 1)", "NULL"),
        ("x > 1 AND FALSE", "FALSE"),
        ("FALSE AND x > 1", "FALSE"),
        ("x > 1 AND TRUE", "NULL"),
        ("x > 1 OR TRUE", "TRUE"),
        ("x > 1 OR FALSE", "NULL"),
        ("NULL", "NULL"),
        ("x", "NULL"),
    ] {
        assert_eq!(value(sql, &[]).unwrap(), want, "{sql}");
        assert!(!matches(sql, &[]) || want == "TRUE", "{sql}");
    }
}

#[test]
fn strings_meet_numbers_in_the_literal_type() {
    // An integer literal reads the property as an int: "05" is 5, "5.5" is an error.
    assert!(matches("a = 5", &[("a", "05")]));
    assert!(matches("a = 5", &[("a", "+5")]));
    assert!(value("a > 5", &[("a", "5.5")]).is_err());
    assert!(value("a > 5", &[("a", " 5")]).is_err());
    assert!(value("a = 5", &[("a", "abc")]).is_err());
    assert!(value("a > 5", &[("a", "3000000000")]).is_err());
    // The same with the literal on the left.
    assert!(matches("5 < a", &[("a", "6")]));
    // A long literal reads a long; a double literal reads Java's double syntax.
    assert!(matches("a < 3000000000", &[("a", "2999999999")]));
    assert!(matches("a > 5.0", &[("a", " 5.5d ")]));
    assert!(matches("a > 5.0", &[("a", "1e3")]));
    assert!(matches("a > 5.0", &[("a", "Infinity")]));
    assert!(value("a > 5.0", &[("a", "inf")]).is_err());
    assert!(value("a > 5.0", &[("a", "0x10")]).is_err());
    // Two properties ordered: both as doubles, or an error.
    assert!(matches("a > b", &[("a", "10"), ("b", "9.5")]));
    assert!(value("a > b", &[("a", "x"), ("b", "1")]).is_err());
    // Equal strings are equal without conversion.
    assert!(matches("a = b", &[("a", "x"), ("b", "x")]));
    // Booleans: the string side reads as Java's Boolean.valueOf.
    assert!(matches("a = TRUE", &[("a", "True")]));
    assert!(matches("a = FALSE", &[("a", "anything")]));
    assert!(value("TRUE = a", &[("a", "true")]).is_err(), "Java fails casting the boolean");
    // A bare property is never TRUE, not even "true".
    assert!(!matches("a", &[("a", "true")]));
    assert_eq!(value("a", &[("a", "true")]).unwrap(), "FALSE");
}

#[test]
fn an_error_fails_the_whole_expression_after_short_circuits() {
    let p = [("a", "abc"), ("b", "x")];
    assert!(matches("b = 'x' OR a > 5", &p), "the left side decides first");
    assert!(!matches("a > 5 OR b = 'x'", &p), "an error is not unknown: no match");
    assert!(!matches("b = 'y' AND a > 5", &p));
}

#[test]
fn number_literals() {
    assert_eq!(SqlFilter::compile("a = 2147483647").unwrap().expr().to_string(), "(a = 2147483647)");
    let e = SqlFilter::compile("a = 2147483648").unwrap();
    assert!(matches!(e.expr(), Expr::Compare(_, _, r) if **r == Expr::Literal(ast::Literal::Long(2147483648))));
    assert!(matches("a = 5L", &[("a", "5")]));
    assert!(matches("a > .5", &[("a", "1")]));
    assert!(matches("a > 5.", &[("a", "6")]));
    assert!(matches("a < 5E-3", &[("a", "0.001")]));
    for bad in ["a = 0.0", "a = .0", "a = 0e5", "a = 9223372036854775808", "a = 1e999", "a = 007", "a = 0x1F", "a = 0L"]
    {
        refused(bad);
    }
    // The largest negative long cannot be written, as in Java.
    refused("a = -9223372036854775808");
    assert!(matches("a = -9223372036854775807", &[("a", "-9223372036854775807")]));
}

#[test]
fn strings_comments_and_whitespace() {
    assert!(matches("s = 'it''s'", &[("s", "it's")]));
    assert!(matches("s = ''", &[("s", "")]));
    assert!(matches("s = 'two\nlines'", &[("s", "two\nlines")]));
    assert!(matches("-- a comment\n s = 'x' /* and\nanother */ AND\t\r\n1 = 1", &[("s", "x")]));
    assert!(matches("$x_1 = 'y'", &[("$x_1", "y")]));
    refused("s = \"x\"");
    refused("s = 'open");
    refused("s = 'x' /* open");
    refused("s = 'x' --no newline");
}

#[test]
fn what_the_grammar_refuses() {
    for bad in [
        "",
        "a != 1",
        "a == 1",
        "a = NULL",
        "NULL = a",
        "a > 'x'",
        "a > TRUE",
        "a BETWEEN 'a' AND 'z'",
        "a BETWEEN 5 AND 1",
        "a IN (1, 2)",
        "a IN ()",
        "'x' IN ('x')",
        "NOT a > 1",
        "a NOT b",
        "a LIKE 'x%'",
        "1",
        "'x'",
        "-a",
        "a AND 5",
        "a + 1 > 2",
        "a > 1 > 2",
        "TRUE = 1",
        "a.b = 1",
        "(a = 1",
        "a = 1)",
        "and = 1",
        "a CONTAINS b",
    ] {
        refused(bad);
    }
    // A bare property alone is accepted (and never matches); NOT a = 1 parses as (NOT a) = 1.
    assert!(SqlFilter::compile("a").is_ok());
    assert!(!matches("NOT a = 1", &[("a", "2")]));
    assert!(SqlFilter::compile("1 = TRUE").is_ok(), "Java only checks a boolean literal on the left");
    assert!(SqlFilter::compile("a BETWEEN 5 AND -1").is_ok(), "a negated bound is not a literal");
}

#[test]
fn errors_point_at_the_place() {
    let e = refused("a > 1 AND\n  b ! 2");
    assert_eq!((e.line, e.column), (2, 5), "{e}");
    assert!(e.to_string().contains("line 2, column 5"), "{e}");
    let e = refused("a >");
    assert_eq!((e.line, e.column), (1, 4), "{e}");
    assert!(e.message.contains("<EOF>"), "{e}");
    let e = refused("a IN (1)");
    assert_eq!(e.column, 7, "{e}");
    let e = refused("a BETWEEN 5 AND 1");
    assert!(e.message.contains("Illegal values of between"), "{e}");
    let e = refused("a = NULL");
    assert!(e.message.contains("'NULL' cannot be compared"), "{e}");
    let e = refused("5");
    assert!(e.message.contains("will not result in a boolean value"), "{e}");
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}a = 1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(refused(&deep).message.contains("nested"));
    let nots = format!("{}a", "NOT ".repeat(5000));
    assert!(refused(&nots).message.contains("nested"));
    let long = vec!["a = 1"; 5000].join(" OR ");
    assert!(refused(&long).message.contains("operators"));
    let ok = format!("{}a = 1{}", "(".repeat(30), ")".repeat(30));
    assert!(matches(&ok, &[("a", "1")]));
}

#[test]
fn tag_type_names() {
    assert!(is_tag_type(None) && is_tag_type(Some("")) && is_tag_type(Some("TAG")));
    assert!(!is_tag_type(Some(SQL92)) && !is_tag_type(Some("tag")));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Any text: a result or an error, never a panic.
    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,60}") {
        if let Ok(f) = SqlFilter::compile(&s) {
            let p = props(&[("a", "1"), ("b", "x")]);
            let _ = eval_with(&f, &p);
        }
    }

    /// Text made of the grammar's own pieces reaches deeper into the parser.
    #[test]
    fn grammar_soup_never_panics(parts in proptest::collection::vec(prop_oneof![
        Just("a"), Just("b"), Just("TAGS"), Just("="), Just("<>"), Just(">"), Just(">="), Just("<"), Just("<="),
        Just("AND"), Just("OR"), Just("NOT"), Just("("), Just(")"), Just(","), Just("BETWEEN"), Just("IN"),
        Just("IS"), Just("NULL"), Just("TRUE"), Just("FALSE"), Just("CONTAINS"), Just("'x'"), Just("1"),
        Just("2.5"), Just("-"), Just("+"), Just("3000000000"), Just("--\n"), Just("/**/"),
    ], 0..24)) {
        let s = parts.join(" ");
        if let Ok(f) = SqlFilter::compile(&s) {
            let p = props(&[("a", "1"), ("b", "x"), ("TAGS", "x")]);
            let _ = eval_with(&f, &p);
        }
    }
}
