import ArgumentParser
import Foundation
import Hoard

/// `hoard demo`: shows each tier at work on the embedded defaults, no server needed.
/// The disk part keeps a store named "hoard-demo" in the user's cache directory.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show each tier at work: memory, disk (a store the next run finds again) and the tiered cache."
    )

    func run() async throws {
        try await MemoryDemo(output: { print($0) }).run()
        print()
        try DiskDemo(output: { print($0) }).run()
        try await CacheDemo(output: { print($0) }).run()
    }
}

/// The memory-tier part of the demo. Uses a manual clock so the expiry shows without
/// waiting.
struct MemoryDemo {
    let output: (String) -> Void

    func run() async throws {
        output("== Memory tier: MemoryCache<String, String>, 3 entries, exact LRU ==")
        let clock = ManualClock(start: Date())
        let cache = try MemoryCache<String, String>(
            configuration: .init(countLimit: 3, lowWaterMark: 1.0), clock: clock)
        let events = cache.events
        let watcher = Task {
            var seen: [String] = []
            for await event in events {
                seen.append(Self.describe(event))
                if case .expired = event { break }
            }
            return seen
        }

        for (key, value) in [("alpha", "first"), ("beta", "second"), ("gamma", "third")] {
            cache[key] = value
            output("set   \(key) = \(value)")
        }
        output("get   alpha -> \(cache["alpha"] ?? "miss")   (alpha is now the most recently used)")
        output("get   beta  -> \(cache["beta"] ?? "miss")")
        cache["delta"] = "fourth"
        output("set   delta = fourth   (over the limit of 3: the least recently used entry goes)")
        output("get   gamma -> \(cache["gamma"] ?? "miss")   (evicted)")
        output("get   zeta  -> \(cache["zeta"] ?? "miss")")

        cache.set("short-lived", for: "token", expires: .seconds(30))
        output("set   token = short-lived, expires in 30 s")
        output("get   token -> \(cache["token"] ?? "miss")")
        clock.advance(by: 31)
        output("      ... 31 seconds later (manual clock)")
        output("get   token -> \(cache["token"] ?? "miss")   (expired)")

        let seen = await watcher.value
        output("events: " + seen.joined(separator: ", "))
        output("statistics: \(cache.statistics)")
        output("count \(cache.count) of 3")
    }

    private static func describe(_ event: MemoryCacheEvent<String>) -> String {
        switch event {
        case .set(let key): return "set(\(key))"
        case .removed(let key): return "removed(\(key))"
        case .evicted(let key, let reason): return "evicted(\(key), \(reason))"
        case .expired(let key): return "expired(\(key))"
        case .removedAll(let count): return "removedAll(\(count))"
        }
    }
}
