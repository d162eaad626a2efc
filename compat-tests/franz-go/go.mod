// franz-go's own integration tests, run against ferrocket's Kafka listener (run.sh). No code of
// ours here: the module only pins the franz-go release whose tests are run.
module ferrocket.dev/compat/franzgo

go 1.26.0

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
)
