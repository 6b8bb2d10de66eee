import Benchmark
import Foundation
import Hoard
import HoardPostgres
import PostgresNIO

/// `PostgresStore` against plain postgres-nio prepared statements running the same
/// SQL on the same table, in the same run, so results compare as ratios.
///
/// The table is `public.hoard_bench` (the store creates it), filled with 10,000
/// keys `key-0` … `key-9999` of 1 KiB in namespace `bench`; `Benchmarks/scripts/
/// postgres-vs-pgbench` runs pgbench with the same statements on the same table.
///
/// - `get 1KiB`: one random key per iteration, one client.
/// - `set 1KiB`: one upsert (with its `pg_notify`, as the store sends) per iteration,
///   one client.
/// - `multi-get 100`: 100 consecutive keys from a random start in one statement
///   (`key = ANY($2)`) per iteration, one client.
/// - `get 1KiB x4` / `set 1KiB x4`: 4 clients (tasks) doing 250 operations each per
///   iteration (1,000 operations, `.kilo`), over a pool of 4 connections.
/// - `set 1KiB batch of 100`: 100 upserts of consecutive keys from a random start per
///   iteration, one client: the store's `write(_:)` (one statement), against the
///   baseline's prepared upsert run 100 times (what a batch costs without a batch
///   statement).
/// - `floor …`: what is possible under the store on these machines, for `get 1KiB`:
///   a raw wire client written by hand over SwiftNIO (`RawPostgresClient`: no
///   library, the next get sent from the channel handler), on one connection, on
///   four sharing one event loop and on four over four loops (pgbench -c 4 -j 4 runs
///   four threads); and postgres-nio's EventLoopFuture API (`PreparedQuery`, no
///   pool) on four connections over four loops. 1,000 gets per iteration.
/// - `PostgresStore on its event loop`: the same calls from tasks that prefer
///   `PostgresStore.taskExecutor`, so no operation costs a thread hop; 1,000
///   operations per iteration (`.kilo`; 100 multi-gets), for one client too, since
///   entering the executor is itself a hop.
///
/// Skipped, with a message, when `HOARD_POSTGRES_URL` is not set.
let benchmarks: @Sendable () -> Void = {
    guard let url = ProcessInfo.processInfo.environment["HOARD_POSTGRES_URL"], !url.isEmpty else {
        print(
            "PostgresStoreBenchmarks: skipped, HOARD_POSTGRES_URL is not set "
                + "(Benchmarks/scripts/postgres-vs-pgbench starts a throwaway server and sets it)")
        return
    }
    let fixture = PostgresFixture(url: url)

    register("postgres get 1KiB: PostgresStore", fixture, perIteration: 1) { try await $0.storeGet() }
    register("postgres get 1KiB: baseline postgres-nio prepared", fixture, perIteration: 1) {
        try await $0.baselineGet()
    }
    register("postgres set 1KiB: PostgresStore", fixture, perIteration: 1) { try await $0.storeSet() }
    register("postgres set 1KiB: baseline postgres-nio prepared", fixture, perIteration: 1) {
        try await $0.baselineSet()
    }
    register("postgres set 1KiB batch of 100: PostgresStore write(_:)", fixture, perIteration: 100) {
        try await $0.storeWriteBatch(count: 100)
    }
    register(
        "postgres set 1KiB batch of 100: baseline postgres-nio prepared, 100 statements", fixture, perIteration: 100
    ) {
        try await $0.baselineSetBatch(count: 100)
    }
    register("postgres multi-get 100: PostgresStore", fixture, perIteration: 1) { try await $0.storeMultiGet() }
    register("postgres multi-get 100: baseline postgres-nio prepared", fixture, perIteration: 1) {
        try await $0.baselineMultiGet()
    }
    register("postgres get 1KiB: PostgresStore on its event loop", fixture, perIteration: 1_000) { fixture in
        try await fixture.onStoreLoop(1_000) { try await fixture.storeGet() }
    }
    register("postgres set 1KiB: PostgresStore on its event loop", fixture, perIteration: 1_000) { fixture in
        try await fixture.onStoreLoop(1_000) { try await fixture.storeSet() }
    }
    register("postgres multi-get 100: PostgresStore on its event loop", fixture, perIteration: 100) { fixture in
        try await fixture.onStoreLoop(100) { try await fixture.storeMultiGet() }
    }
    register("postgres get 1KiB x4: PostgresStore on its event loop", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrentlyOnStoreLoop(4, 250) { try await fixture.storeGet() }
    }
    register("postgres set 1KiB x4: PostgresStore on its event loop", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrentlyOnStoreLoop(4, 250) { try await fixture.storeSet() }
    }
    register("postgres get 1KiB: floor raw wire client", fixture, perIteration: 1_000) { try await $0.rawGets(1_000) }
    register("postgres get 1KiB x4: floor raw wire client, one loop", fixture, perIteration: 1_000) {
        try await $0.rawGetsX4(250, fourLoops: false)
    }
    register("postgres get 1KiB x4: floor raw wire client, four loops", fixture, perIteration: 1_000) {
        try await $0.rawGetsX4(250, fourLoops: true)
    }
    register("postgres get 1KiB x4: floor postgres-nio EventLoopFuture API, four loops", fixture, perIteration: 1_000) {
        try await $0.futuresGetsX4(250)
    }
    register("postgres get 1KiB x4: PostgresStore", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrently(4, 250) { try await fixture.storeGet() }
    }
    register("postgres get 1KiB x4: baseline postgres-nio prepared", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrently(4, 250) { try await fixture.baselineGet() }
    }
    register("postgres set 1KiB x4: PostgresStore", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrently(4, 250) { try await fixture.storeSet() }
    }
    register("postgres set 1KiB x4: baseline postgres-nio prepared", fixture, perIteration: 1_000) { fixture in
        try await fixture.concurrently(4, 250) { try await fixture.baselineSet() }
    }
}

/// Registers one benchmark on the shared fixture, which is opened and filled by the
/// first benchmark's setup.
func register(
    _ name: String, _ fixture: PostgresFixture, perIteration: Int,
    run: @escaping @Sendable (PostgresFixture) async throws -> Void
) {
    Benchmark(
        name,
        configuration: .init(
            // CPU time (of the whole process, per operation) only where an iteration is
            // long enough for the clock's 10 ms steps.
            metrics: perIteration >= 100 ? [.wallClock, .throughput, .cpuTotal] : [.wallClock, .throughput],
            units: [.throughput: .count],
            warmupIterations: perIteration == 1 ? 50 : 2,
            scalingFactor: perIteration >= 1_000 ? .kilo : .one,
            maxDuration: .seconds(3),
            maxIterations: 100_000
        ),
        closure: { _ in try await run(fixture) },
        setup: { try await fixture.open() }
    )
}
