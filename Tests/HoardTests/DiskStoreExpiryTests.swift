import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    @Suite("DiskStore expiry")
    struct DiskStoreExpiryTests {
        @Test("An expired entry is a miss, is removed when read, and is reported")
        func lazyExpiry() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given entries with and without a lifetime, inline and in a file
                let clock = ManualClock()
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler), clock: clock)
                try store.set(DiskTest.bytes(10), for: "short", expires: .seconds(10), in: "ns")
                try store.set(DiskTest.bytes(500), for: "short-file", expires: .seconds(10), in: "ns")
                try store.set(DiskTest.bytes(10), for: "forever", in: "ns")
                #expect(try store.contains("short", in: "ns"))
                #expect(DiskTest.blobFiles(url).count == 1)

                // When the clock passes the lifetime
                clock.advance(by: 10)

                // Then the expired entries are misses (the boundary itself is expired)
                #expect(try !store.contains("short", in: "ns"))
                #expect(try store.keys(in: "ns") == ["forever"])
                #expect(try store.usage(in: "ns").count == 3, "not removed until read or swept")
                #expect(try store.entry(for: "short", in: "ns") == nil)
                #expect(try store.entry(for: "short-file", in: "ns") == nil)
                #expect(try store.usage(in: "ns").count == 1)
                #expect(DiskTest.blobFiles(url).isEmpty)
                #expect(try store.entry(for: "forever", in: "ns")?.data == DiskTest.bytes(10))
                let expirations = events.all.filter { if case .expired(1) = $0 { true } else { false } }
                #expect(expirations.count == 2)
            }
        }

        @Test("removeExpired removes every expired entry in every namespace")
        func sweep() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock()
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler), clock: clock)
                for i in 0..<10 {
                    try store.set(
                        DiskTest.bytes(i % 2 == 0 ? 50 : 500), for: "k\(i)", expires: .seconds(Double(i + 1)),
                        in: "ns\(i % 3)")
                }
                try store.set(DiskTest.bytes(5), for: "keep", expires: .never, in: "ns0")
                clock.advance(by: 5)
                #expect(try store.removeExpired() == 5)
                #expect(try store.totalUsage().count == 6)
                clock.advance(by: 100)
                #expect(try store.removeExpired() == 5)
                #expect(try store.removeExpired() == 0)
                #expect(try store.keys(in: "ns0") == ["keep"])
                #expect(DiskTest.blobFiles(url).isEmpty)
                let counts = events.all.compactMap { if case .expired(let count) = $0 { count } else { nil } }
                #expect(counts == [5, 5])
            }
        }

        @Test("Typed writes take the configured default lifetime unless they give one")
        func defaultExpiry() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock()
                let store = try DiskStore(
                    directory: url, configuration: .init(defaultExpiry: .minutes(1)), clock: clock)
                try store.set("a", for: "default")
                try store.set("b", for: "never", expires: .never)
                try store.set("c", for: "at", expires: .at(clock.now().addingTimeInterval(600)))
                #expect(
                    try store.entry(for: "default", as: String.self)?.expiresAt == clock.now().addingTimeInterval(60))
                clock.advance(by: 61)
                #expect(try store.value(for: "default", as: String.self) == nil)
                #expect(try store.value(for: "never", as: String.self) == "b")
                #expect(try store.value(for: "at", as: String.self) == "c")
                clock.advance(by: 600)
                #expect(try store.value(for: "at", as: String.self) == nil)
            }
        }

        @Test("An entry written with a date in the past is stored already expired")
        func alreadyExpired() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock()
                let store = try DiskStore(directory: url, clock: clock)
                try store.set(
                    Data([1]), for: "k", in: "ns", storedAt: clock.now(), expiresAt: clock.now().addingTimeInterval(-1))
                #expect(try store.entry(for: "k", in: "ns") == nil)
                try store.set("v", for: "zero", expires: .seconds(0))
                #expect(try store.value(for: "zero", as: String.self) == nil)
            }
        }
    }
}
