import Foundation
import Hoard
import Synchronization

/// The tiered-cache part of the demo: a cold fetch, a memory hit, a restart answered
/// from disk, a stampede answered by one fetch, and the statistics.
struct CacheDemo {
    let output: (String) -> Void

    struct Profile: Codable, Sendable {
        var id: Int
        var name: String
    }

    func run() async throws {
        output("")
        output("== Tiered cache: Cache<Int, Profile>, memory over a DiskStore, with a fetch closure ==")
        let fetches = Atomic<Int>(0)
        let fetch: Cache<Int, Profile>.Fetch = { id in
            fetches.add(1, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(20))  // stands in for a network round trip
            return Profile(id: id, name: "user \(id)")
        }
        var configuration = Cache<Int, Profile>.Configuration(name: "hoard-demo-profiles")
        configuration.memory = .init(countLimit: 100)
        do {
            let cache = try Cache(configuration: configuration, fetch: fetch)
            try await cache.clear()
            let start = ContinuousClock.now
            let cold = try await cache.value(for: 1)
            output("cold   value(for: 1) -> \(cold?.name ?? "nil")   fetched (\(ContinuousClock.now - start))")
            let warm = ContinuousClock.now
            _ = try await cache.value(for: 1)
            output("warm   value(for: 1) -> memory hit (\(ContinuousClock.now - warm))")
            await cache.flush()
            output("flush  the write-behind queue reached the disk store")
        }
        output("restart: a new Cache instance on the same disk store")
        let cache = try Cache(configuration: configuration, fetch: fetch)
        let fromDisk = cache[1]
        output("sync   cache[1] -> \(fromDisk?.name ?? "nil")   (disk hit, promoted into memory)")

        let before = fetches.load(ordering: .relaxed)
        let names = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<1_000 { group.addTask { try await cache.value(for: 2)?.name } }
            return try await group.reduce(into: Set<String?>()) { $0.insert($1) }
        }
        let stampedeFetches = fetches.load(ordering: .relaxed) - before
        output(
            "stampede: 1,000 concurrent value(for: 2) -> \(names.count) distinct answer, \(stampedeFetches) fetch, "
                + "\(cache.statistics.coalescedWaits) callers waited for it")
        output("statistics: \(cache.statistics)")
        try await cache.clear()
    }
}
