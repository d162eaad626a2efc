//! What one rewrite of a JSON config file costs (temp file, fsync, rename, `persist::ConfigFile`):
//! the Kafka transaction log (`config/kafkaTransactions.json`) is rewritten whole at every
//! AddPartitions, AddOffsets, Prepare and Complete, so a Kafka Streams EOS commit (100 ms
//! interval) pays four of these. Sizes: one transactional id, and the default cap of 1,000 ids
//! (about 270 bytes each). Before #27's follow-up these were timed in unit tests (25 ms and
//! 100 ms), which a busy machine failed; speed lives here.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use ferrocket::persist::ConfigFile;

fn rewrite(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut g = c.benchmark_group("config_file_rewrite");
    g.sampling_mode(SamplingMode::Flat).sample_size(20).measurement_time(Duration::from_secs(5));
    for ids in [1usize, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let body: Vec<u8> = format!("[{}]", vec!["x".repeat(268); ids].join(",")).into_bytes();
        let file = ConfigFile::new(dir.path().join("kafkaTransactions.json"), Box::new(move || body.clone()));
        g.bench_with_input(BenchmarkId::new("ids", ids), &ids, |b, _| {
            b.iter(|| rt.block_on(file.persist()).unwrap());
        });
    }
    g.finish();
}

criterion_group!(benches, rewrite);
criterion_main!(benches);
