import Benchmark
import Hoard

/// Hit ratio of `MemoryCache` (`.lru` and `.tinyLFU`, countLimit N = 1,000 /
/// 5,000 / 10,000, lowWaterMark 1.0, one shard) on the repository's traces, printed
/// next to the reference figures from `Tests/Traces/README.md` (libCacheSim's
/// LRU and W-TinyLFU columns). `.lru` must match its reference to the fourth
/// decimal: that validates the replay harness itself.
///
/// One benchmark per trace ("hit-ratio zipf1.0", ...), one iteration each, which
/// replays all six configurations (wall clock = all six replays). The trace is read
/// in the benchmark's setup, outside the measurement; the table is printed in its
/// teardown (the runner hides what a benchmark prints while it is measured). A
/// missing or damaged trace fails its benchmark.
let benchmarks: @Sendable () -> Void = {
    for trace in ["zipf1.0", "scan", "loop"] {
        let report = Report()
        Benchmark(
            "hit-ratio \(trace)",
            configuration: .init(
                metrics: [.wallClock],
                warmupIterations: 0,
                maxDuration: .seconds(60),
                maxIterations: 1
            ),
            closure: { benchmark, loaded in
                let keys: [UInt32]
                switch loaded {
                case .success(let trace): keys = trace
                case .failure(let error):
                    benchmark.error("hit-ratio \(trace): \(error)")
                    return
                }
                do {
                    var results: [ReplayResult] = []
                    for size in Reference.sizes {
                        for policy in [EvictionPolicy.lru, .tinyLFU] {
                            results.append(try replay(keys, trace: trace, size: size, policy: policy))
                        }
                    }
                    report.results = results
                } catch {
                    benchmark.error("hit-ratio \(trace): \(error)")
                }
            },
            setup: { () -> Result<[UInt32], TraceError> in
                Result { () throws(TraceError) in try Traces.load(trace) }
            },
            teardown: {
                guard !report.results.isEmpty else { return }
                print("\nHit ratios, trace \(trace), \(report.results[0].requests) requests")
                print(formatTable(report.results) + "\n")
                report.results = []
            }
        )
    }
}

/// Hands one trace's results from the measured closure to the teardown, which
/// the runner calls on the same thread afterwards.
final class Report {
    var results: [ReplayResult] = []
}
