import BenchSQLite
import Benchmark
import Foundation
import Hoard

/// `DiskStore` against baselines measured in the same run, so results compare as
/// ratios. Every benchmark gets a fresh temporary directory, created and filled in
/// its setup and removed in its teardown.
///
/// - 1 KiB values over 100,000 entries (all present): `get` (random keys, 1,000 per
///   iteration, `.kilo`; with the default configuration nearly every read records
///   an access, as each key is read about once a second, the resolution; with
///   `access resolution 1 hour` only an instance's first read of each key records
///   one, and later reads are the lookup alone, the path the raw SQLite baseline
///   measures), `set` (one overwrite per transaction, one per iteration),
///   `insert` (a key not yet stored, one per transaction, one per iteration; also
///   in a store with a byte limit it never reaches, which sums the entries not yet
///   folded into the namespace totals after every write),
///   `set batch1000` (1,000 overwrites in one transaction per iteration, `.kilo`),
///   `mix90/10` (1,000 operations per iteration, `.kilo`: 90% gets, 10% overwrites,
///   each in its own transaction; the DiskStore records read access times in
///   memory and writes them with the next write, the baseline updates an access
///   column on every get, as python-diskcache does), `get 2 threads` (two threads
///   reading 1,000 random keys each per iteration, against the 1-thread row; its
///   floor is raw SQLite with a connection per thread, against raw SQLite's
///   1-thread row), and
///   `rounds` (1,000 random gets, then 100 random overwrites each in its own
///   transaction, per iteration: a server's mix, where the writes follow reads
///   whose access times are pending). The `get` and `rounds` rows also run with
///   `accessFlushCount` 1,000 (the default before 10,000), which separates what the
///   size of the access flushes costs the reads; and `get` as a floor with no flush
///   during the run (the recorded accesses stay in memory), the store's read path
///   without the access writes beside it; and `get` as a floor of raw SQLite
///   running the store's lookup on the store's own index (`StoreSchemaSubject`:
///   the store's format, without its checksum, access order or Swift); and
///   `get then flush` runs 10,000 of the no-flush
///   floor's gets (the default flush count) and then writes their access times in
///   one flush on the same thread, so that its difference from ten times the floor
///   is what a flush costs.
///   `get, every entry read before` is the default `get` in a store whose every
///   entry already has an access row (see `flush`), as a long-running server's.
///   `flush` measures that flush alone (the 10,000 gets before it are not timed)
///   in a store whose every entry already has an access row, as in a server that
///   has read them all before, against a floor of raw SQLite running the store's
///   access statement for the same 10,000 rows in one transaction on the store's
///   own index (`StoreSchemaSubject`). `trim` measures `trim(toBytes:count:)`
///   evicting the 10,000 least recently accessed of 100,000 such entries (10,000
///   new ones are written, untimed, before each), against raw SQLite deleting the
///   10,000 oldest in one statement on the store's index.
///   Baseline: raw SQLite prepared statements on a table with PRIMARY KEY
///   (namespace, key) (a rowid table), WAL, synchronous=NORMAL. Floor (`set`,
///   `insert`, `set batch1000`): raw SQLite running DiskStore's own statements on
///   the index a DiskStore built (`StoreSchemaSubject`), which separates what the
///   store's format costs from what its Swift costs. Baseline for `get` and
///   `get 2 threads`: GRDB's `DatabasePool` running the store's lookup on the
///   store's own index file (`GRDBSubject`).
/// - 100 KiB values over 2,000 entries (above the spill threshold, so in files):
///   `get` and `set`, one per iteration. Baseline: one file per entry, written to a
///   temporary name and renamed (no fsync), read with `Data(contentsOf:)`. Floor
///   (`get`): raw SQLite's lookup on DiskStore's schema and the store's own file
///   reads, without the checksum (`StoreSchemaSubject`).
///
/// The DiskStore runs with `syncsValueFiles: false`, as the file baseline does not sync.
///
/// With `BENCH_SQLITE_MEMSTATUS=0` in the environment every subject runs with
/// SQLite's memory statistics off, which removes the process-wide mutex each SQLite
/// allocation takes: what that mutex costs the 2-thread rows, store and raw SQLite
/// alike. The store does not turn them off itself: the setting is the whole
/// process's, and other SQLite users in it may rely on the statistics.
let benchmarks: @Sendable () -> Void = {
    // `BENCH_SQLITE_MEMSTATUS=0` runs every subject with SQLite's memory statistics
    // off (see `bench_sqlite_memory_statistics_off`), before any connection opens.
    if ProcessInfo.processInfo.environment["BENCH_SQLITE_MEMSTATUS"] == "0" {
        precondition(bench_sqlite_memory_statistics_off() == SQLITE_OK, "SQLite was initialised already")
    }
    let small = Shape(valueSize: 1 << 10, entries: 100_000, label: "1KiB")
    let large = Shape(valueSize: 100 << 10, entries: 2_000, label: "100KiB")

    // 1 KiB
    register("disk get 1KiB: DiskStore", shape: small, perIteration: 1_000, make: { try StoreSubject(shape: small) }) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB: DiskStore, every entry read before", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small, readBefore: true) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB: DiskStore, access resolution 1 hour", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small, accessTimeResolution: 3_600) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB: DiskStore, access flush count 1,000", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small, accessFlushCount: 1_000) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB: floor, DiskStore with no access flush during the run", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small, accessFlushCount: .max, accessFlushInterval: 86_400) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB then flush: DiskStore, 10,000 gets then one flush of their access times", shape: small,
        perIteration: 10_000,
        make: { try StoreSubject(shape: small, accessFlushCount: .max, accessFlushInterval: 86_400) }
    ) {
        $0.getThenFlush(10_000)
    }
    register(
        "disk flush 1KiB: DiskStore, 10,000 accesses, every entry read before", shape: small,
        perIteration: 10_000,
        make: { try StoreSubject(shape: small, accessFlushCount: .max, accessFlushInterval: 86_400, readBefore: true) }
    ) { benchmark, subject in
        subject.get(10_000)
        benchmark.startMeasurement()
        subject.store.flushAccessTimes()
        benchmark.stopMeasurement()
    }
    register(
        "disk flush 1KiB: floor, raw SQLite writing the same access rows on DiskStore's index", shape: small,
        perIteration: 10_000, make: { try StoreSchemaSubject(shape: small, readBefore: true) }
    ) { benchmark, subject in
        let ids = subject.randomIDs(10_000)
        benchmark.startMeasurement()
        try subject.touch(ids)
        benchmark.stopMeasurement()
    }
    register(
        "disk trim 1KiB: DiskStore, the 10,000 least recently accessed of 100,000", shape: small,
        perIteration: 10_000, make: { try StoreSubject(shape: small, readBefore: true) }
    ) { benchmark, subject in
        try subject.insertBatch(10_000)
        benchmark.startMeasurement()
        let evicted = try subject.store.trim(toBytes: nil, count: small.entries)
        benchmark.stopMeasurement()
        precondition(evicted == 10_000, "the trim evicted \(evicted) entries")
    }
    register(
        "disk trim 1KiB: floor, raw SQLite deleting the 10,000 oldest on DiskStore's index", shape: small,
        perIteration: 10_000, make: { try StoreSchemaSubject(shape: small, readBefore: true) }
    ) { benchmark, subject in
        try subject.insertBatch(10_000)
        benchmark.startMeasurement()
        try subject.deleteOldest(10_000)
        benchmark.stopMeasurement()
    }
    register(
        "disk get 1KiB: baseline raw SQLite", shape: small, perIteration: 1_000,
        make: { try SQLiteSubject(shape: small) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB: floor, raw SQLite running DiskStore's lookup on its index", shape: small,
        perIteration: 1_000, make: { try StoreSchemaSubject(shape: small) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB 2 threads: DiskStore (1,000 gets per thread)", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small) }
    ) {
        $0.getOnThreads(2, 1_000)
    }
    register(
        "disk get 1KiB 2 threads: DiskStore with no access flush during the run (1,000 gets per thread)",
        shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small, accessFlushCount: .max, accessFlushInterval: 86_400) }
    ) {
        $0.getOnThreads(2, 1_000)
    }
    register(
        "disk get 1KiB 2 threads: floor, raw SQLite, a connection per thread (1,000 gets per thread)", shape: small,
        perIteration: 1_000, make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.getOnThreads(2, 1_000)
    }
    register(
        "disk get 1KiB: baseline GRDB DatabasePool", shape: small, perIteration: 1_000,
        make: { try GRDBSubject(shape: small) }
    ) {
        $0.get(1_000)
    }
    register(
        "disk get 1KiB 2 threads: baseline GRDB DatabasePool (1,000 gets per thread)", shape: small,
        perIteration: 1_000, make: { try GRDBSubject(shape: small) }
    ) {
        $0.getOnThreads(2, 1_000)
    }
    register(
        "disk rounds 1KiB: DiskStore (1,000 random gets, then 100 random overwrites)", shape: small,
        perIteration: 1_000, make: { try StoreSubject(shape: small) }
    ) {
        try $0.rounds(gets: 1_000, overwrites: 100)
    }
    register(
        "disk rounds 1KiB: DiskStore, access flush count 1,000 (1,000 random gets, then 100 random overwrites)",
        shape: small, perIteration: 1_000, make: { try StoreSubject(shape: small, accessFlushCount: 1_000) }
    ) {
        try $0.rounds(gets: 1_000, overwrites: 100)
    }
    register(
        "disk rounds 1KiB: baseline raw SQLite (1,000 random gets, then 100 random overwrites)", shape: small,
        perIteration: 1_000, make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.rounds(gets: 1_000, overwrites: 100)
    }
    register("disk set 1KiB: DiskStore", shape: small, perIteration: 1, make: { try StoreSubject(shape: small) }) {
        try $0.setOne()
    }
    register(
        "disk set 1KiB: baseline raw SQLite", shape: small, perIteration: 1, make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.setOne()
    }
    register(
        "disk set 1KiB: floor, raw SQLite on DiskStore's schema", shape: small, perIteration: 1,
        make: { try StoreSchemaSubject(shape: small) }
    ) {
        try $0.setOne()
    }
    register("disk insert 1KiB: DiskStore", shape: small, perIteration: 1, make: { try StoreSubject(shape: small) }) {
        try $0.insertOne()
    }
    register(
        "disk insert 1KiB: DiskStore with a byte limit of 1 TiB (checked, never reached)", shape: small,
        perIteration: 1, make: { try StoreSubject(shape: small, byteLimit: 1 << 40) }
    ) {
        try $0.insertOne()
    }
    register(
        "disk insert 1KiB: baseline raw SQLite", shape: small, perIteration: 1,
        make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.insertOne()
    }
    register(
        "disk insert 1KiB: floor, raw SQLite on DiskStore's schema", shape: small, perIteration: 1,
        make: { try StoreSchemaSubject(shape: small) }
    ) {
        try $0.insertOne()
    }
    register(
        "disk set batch1000 1KiB: DiskStore", shape: small, perIteration: 1_000,
        make: { try StoreSubject(shape: small) }
    ) {
        try $0.setBatch(1_000)
    }
    register(
        "disk set batch1000 1KiB: baseline raw SQLite", shape: small, perIteration: 1_000,
        make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.setBatch(1_000)
    }
    register(
        "disk set batch1000 1KiB: floor, raw SQLite on DiskStore's schema", shape: small, perIteration: 1_000,
        make: { try StoreSchemaSubject(shape: small) }
    ) {
        try $0.setBatch(1_000)
    }
    register(
        "disk mix90/10 1KiB: DiskStore", shape: small, perIteration: 1_000, make: { try StoreSubject(shape: small) }
    ) {
        try $0.mixed(1_000)
    }
    register(
        "disk mix90/10 1KiB: baseline raw SQLite, access time updated on every get", shape: small,
        perIteration: 1_000, make: { try SQLiteSubject(shape: small) }
    ) {
        try $0.mixed(1_000)
    }

    // 100 KiB
    register("disk get 100KiB: DiskStore", shape: large, perIteration: 1, make: { try StoreSubject(shape: large) }) {
        $0.get(1)
    }
    register(
        "disk get 100KiB: floor, raw SQLite lookup on DiskStore's schema and its file reads", shape: large,
        perIteration: 1, make: { try StoreSchemaSubject(shape: large) }
    ) {
        $0.get(1)
    }
    register("disk get 100KiB: baseline files", shape: large, perIteration: 1, make: { try FilesSubject(shape: large) })
    {
        $0.get(1)
    }
    register("disk set 100KiB: DiskStore", shape: large, perIteration: 1, make: { try StoreSubject(shape: large) }) {
        try $0.setOne()
    }
    register("disk set 100KiB: baseline files", shape: large, perIteration: 1, make: { try FilesSubject(shape: large) })
    {
        try $0.setOne()
    }
}

/// Registers one benchmark whose setup builds and fills a subject in a fresh
/// directory, and whose teardown closes it and removes the directory.
func register<S: BenchSubject>(
    _ name: String, shape: Shape, perIteration: Int, make: @escaping () throws -> S,
    run: @escaping (S) throws -> Void
) {
    register(name, shape: shape, perIteration: perIteration, make: make) { _, subject in try run(subject) }
}

/// ``register(_:shape:perIteration:make:run:)`` for a benchmark that times part of
/// each iteration itself, between `startMeasurement()` and `stopMeasurement()`.
func register<S: BenchSubject>(
    _ name: String, shape: Shape, perIteration: Int, make: @escaping () throws -> S,
    run: @escaping (Benchmark, S) throws -> Void
) {
    let current = Current<S>()
    Benchmark(
        name,
        configuration: .init(
            metrics: [.wallClock, .throughput, .mallocCountTotal],
            units: [.throughput: .count],
            warmupIterations: perIteration == 1 ? 20 : 3,
            scalingFactor: perIteration == 1 ? .one : .kilo,
            maxDuration: .seconds(3),
            maxIterations: 100_000
        ),
        closure: { benchmark, subject in try run(benchmark, subject) },
        setup: {
            let subject = try make()
            current.subject = subject
            return subject
        },
        teardown: {
            current.subject?.close()
            current.subject = nil
        }
    )
}

/// Hands a subject from a benchmark's setup to its teardown.
final class Current<S> {
    var subject: S?
}

/// The value size and entry count of one group of benchmarks.
struct Shape: Sendable {
    let valueSize: Int
    let entries: Int
    let label: String

    var keys: [String] { (0..<entries).map { "key-\($0)" } }
}

/// A fresh directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("hoard-bench-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A small deterministic generator (SplitMix64) for key indices.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Precomputed random key indices, walked in order across iterations.
struct KeyStream {
    private let indices: [Int]
    private var position = 0

    init(count: Int, upperBound: Int, seed: UInt64) {
        var generator = SplitMix(state: seed)
        indices = (0..<count).map { _ in Int.random(in: 0..<upperBound, using: &generator) }
    }

    mutating func next() -> Int {
        let index = indices[position]
        position = position + 1 == indices.count ? 0 : position + 1
        return index
    }
}

/// A subject a benchmark's setup makes and its teardown closes.
protocol BenchSubject: AnyObject {
    /// Closes the store and removes its directory.
    func close()
}

/// What the benchmarks do with a store.
protocol DiskSubject: BenchSubject {
    /// `count` reads of random present keys.
    func get(_ count: Int)
    /// One overwrite of a random key, in its own transaction.
    func setOne() throws
    /// One write of a key not stored yet (`new-0`, `new-1`, …), in its own
    /// transaction.
    func insertOne() throws
    /// `count` overwrites of random keys in one transaction.
    func setBatch(_ count: Int) throws
    /// `count` operations, 90% reads and 10% overwrites of random keys, each
    /// overwrite in its own transaction.
    func mixed(_ count: Int) throws
}

extension DiskSubject {
    func mixed(_ count: Int) throws {
        for operation in 0..<count {
            if operation % 10 == 9 { try setOne() } else { get(1) }
        }
    }
}
