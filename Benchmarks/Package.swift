// swift-tools-version: 6.2
import PackageDescription

// Warnings are made errors by scripts/test (`swift build -Xswiftc -warnings-as-errors`),
// as for the Hoard package itself.
let package = Package(
    name: "HoardBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [
        // Named, so targets can say `package: "Hoard"` whatever the checkout's folder is called.
        .package(name: "Hoard", path: "..", traits: ["Redis", "Postgres"]),
        // The explicit trait list is required: a default trait of 1.38.1 pulls a
        // package the local mirror does not have.
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        // For the bare-NIO reference client of RedisStoreBenchmarks (Hoard already depends on it).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The Logger that the floor's postgres-nio connections take.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The DatabasePool baseline of DiskStoreBenchmarks' reads.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // Throughput of MemoryCache against Mutex<Dictionary> and NSCache baselines.
        .executableTarget(
            name: "MemoryCacheBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MemoryCacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Hit ratios on the repository's traces (Tests/Traces) against libCacheSim's reference figures.
        .executableTarget(
            name: "HitRatioBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/HitRatioBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // DiskStore against raw SQLite and one-file-per-value baselines.
        .systemLibrary(
            name: "BenchSQLite",
            path: "Sources/BenchSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .executableTarget(
            name: "DiskStoreBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "BenchSQLite",
            ],
            path: "Benchmarks/DiskStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The tiered Cache: memory hits, stampedes, disk hits, write-behind.
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // MessageLog appends and full reads against plain file I/O.
        .executableTarget(
            name: "MessageLogBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MessageLogBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // RedisStore get, set (1 connection; 16 pipelined) and MGET of 100 keys against a
        // raw RESP client over a blocking socket; scripts/redis-vs-redis-benchmark adds
        // redis-benchmark's figures. Skipped without HOARD_REDIS_URL.
        .executableTarget(
            name: "RedisStoreBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "HoardRedis", package: "Hoard"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/RedisStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // PostgresStore against postgres-nio prepared statements on the same table
        // (and, through Benchmarks/scripts/postgres-vs-pgbench, against pgbench).
        .executableTarget(
            name: "PostgresStoreBenchmarks",
            dependencies: [
                .product(name: "Hoard", package: "Hoard"),
                .product(name: "HoardPostgres", package: "Hoard"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Benchmark", package: "benchmark"),
                // For the floors: the raw wire client's event loops and postgres-nio's logger.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/PostgresStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
