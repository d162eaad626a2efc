//! Trust boundary: the SQL92 selector a consumer subscribes with (heartbeat, pull header,
//! CHECK_CLIENT_CONFIG), compiled by the broker. Compiling must never panic or overflow the stack
//! (nesting and size are bounded); whatever compiles must print, and evaluate without panicking to
//! the same result twice over a message whose properties come from the rest of the input.
#![no_main]

use ferrocket::filter::SqlFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First line: the selector; the rest: name=value properties, one per line.
    let text = String::from_utf8_lossy(data);
    let (sql, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let Ok(filter) = SqlFilter::compile(sql) else { return };
    let _ = filter.expr().to_string();
    let props: Vec<(&str, &str)> = rest.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |k: &str| props.iter().rev().find(|(n, _)| *n == k).map(|(_, v)| *v);
    let first = filter.evaluate(get);
    let second = filter.evaluate(get);
    assert_eq!(first, second, "evaluation is not deterministic");
});
