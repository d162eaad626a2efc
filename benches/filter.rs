//! SQL92 selectors: the cost of compiling one, and of evaluating it against one message's
//! properties (what a pull pays per candidate message on top of reading it).

use criterion::{criterion_group, criterion_main, Criterion};
use ferrocket::filter::SqlFilter;
use ferrocket::model::message::{properties_to_string, property_value};

const SELECTORS: &[(&str, &str)] = &[
    ("tags_eq", "TAGS = 'TagA'"),
    ("int_range", "a BETWEEN 10 AND 20"),
    ("mixed", "(a > 5 OR s = 's1') AND TAGS IN ('TagA', 'TagB') AND opt IS NULL"),
    ("strings", "s STARTSWITH 's' AND s NOT CONTAINS 'x' AND d > 0.5"),
];

fn bench_filter(c: &mut Criterion) {
    // A message's properties as stored: system ones and a few user ones.
    let props = properties_to_string([
        ("UNIQ_KEY", "7F0000011B2A18B4AAC2A1B2C3D40000"),
        ("WAIT", "true"),
        ("TAGS", "TagA"),
        ("KEYS", "order-42"),
        ("a", "15"),
        ("s", "s1"),
        ("d", "2.5"),
        ("CLUSTER", "DefaultCluster"),
    ]);
    for (name, sql) in SELECTORS {
        c.bench_function(&format!("sql92_compile/{name}"), |b| b.iter(|| SqlFilter::compile(sql).unwrap()));
        let f = SqlFilter::compile(sql).unwrap();
        c.bench_function(&format!("sql92_match/{name}"), |b| b.iter(|| f.matches(|k| property_value(&props, k))));
    }
}

criterion_group!(benches, bench_filter);
criterion_main!(benches);
