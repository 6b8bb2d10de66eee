import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    @Suite("DiskStore keys of any content")
    struct DiskStoreKeysTests {
        static let awkwardKeys: [String] = [
            "", " ", "a/b/c", "/absolute/path", "../../../../etc/passwd", "..", ".", "./.", "..\\..\\windows",
            "with\0nul", "\0", "a\0", "a", "trailing/", "%2e%2e%2f", "C:\\Windows\\System32",
            "line\nbreak\ttab\r", "👩‍👩‍👧‍👦", "مرحبا بالعالم", "日本語のキー", "Ωμέγα", "\u{202E}reversed",
            "\u{FEFF}bom", "\u{10FFFF}", String(repeating: "k", count: 10_240), String(repeating: "é/", count: 5_000),
        ]

        @Test("Awkward keys and namespaces round-trip, inline and in files, and stay apart")
        func awkwardKeysRoundTrip() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store whose values above 8 bytes go to files
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 8))
                for (i, key) in Self.awkwardKeys.enumerated() {
                    for (j, namespace) in ["ns", "../ns", "ns\0x", "名前空間"].enumerated() {
                        let value = DiskTest.bytes(j % 2 == 0 ? 4 : 64, seed: i * 10 + j)
                        try store.set(value, for: key, in: namespace, storedAt: Date(), expiresAt: nil)
                    }
                }
                // Then every one reads back exactly, and the keys list holds them all
                for (i, key) in Self.awkwardKeys.enumerated() {
                    for (j, namespace) in ["ns", "../ns", "ns\0x", "名前空間"].enumerated() {
                        let value = DiskTest.bytes(j % 2 == 0 ? 4 : 64, seed: i * 10 + j)
                        #expect(try store.entry(for: key, in: namespace)?.data == value, "key #\(i) in namespace #\(j)")
                    }
                }
                #expect(Set(try store.keys(in: "../ns")) == Set(Self.awkwardKeys))
                #expect(try store.keys(in: "ns").count == Self.awkwardKeys.count)
                // And no file was created outside the store, nor under a name from a key
                let parent = url.deletingLastPathComponent()
                #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["store"])
                let files = DiskTest.blobFiles(url)
                #expect(files.count == Self.awkwardKeys.count * 2)
                #expect(files.allSatisfy { $0.utf8.count == 33 && $0.allSatisfy { "0123456789abcdef-".contains($0) } })
                #expect(
                    Set(DiskTest.tree(url))
                        == Set(
                            [
                                "blobs", "index.sqlite", "index.sqlite-reserve", "index.sqlite-shm", "index.sqlite-wal",
                                "lock",
                            ]
                                + files.map { "blobs/\($0)" }))
                // Removing by an awkward key removes that key only
                #expect(try store.removeValue(for: "a\0", in: "ns"))
                #expect(try store.entry(for: "a", in: "ns") != nil)
                #expect(try store.entry(for: "a\0", in: "ns") == nil)
                #expect(try store.entry(for: "with\0nul", in: "ns") != nil)
            }
        }

        @Test("Keys Swift considers equal are one key: canonically equivalent Unicode is stored in NFC")
        func canonicalEquivalence() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                let precomposed = "caf\u{E9}"
                let decomposed = "cafe\u{301}"
                #expect(precomposed == decomposed)
                try store.set("first", for: decomposed)
                #expect(try store.value(for: precomposed, as: String.self) == "first")
                try store.set("second", for: precomposed)
                #expect(try store.keys(in: DiskStore.defaultNamespace) == [precomposed])
                #expect(try store.keys(in: DiskStore.defaultNamespace).first?.unicodeScalars.count == 4)
                #expect(try store.value(for: decomposed, as: String.self) == "second")
                // Namespaces too
                try store.set("x", for: "k", in: "r\u{E9}sum\u{E9}")
                #expect(try store.value(for: "k", as: String.self, in: "re\u{301}sume\u{301}") == "x")
            }
        }

        @Test("A key of a megabyte works")
        func hugeKey() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                let key = String(repeating: "0123456789abcdef", count: 65_536)
                try store.set("v", for: key)
                #expect(try store.value(for: key, as: String.self) == "v")
                #expect(try store.value(for: String(key.dropLast()), as: String.self) == nil)
            }
        }
    }
}
