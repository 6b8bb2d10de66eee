import Foundation
import Testing

#if os(Linux)
extension DiskStoreSuites {
    /// `hoard settings` on values it cannot read and on damaged suite files, with the
    /// config folder (where corelibs Foundation keeps suites) in a temporary directory.
    @Suite("hoard settings on unreadable values and damaged suites", .timeLimit(.minutes(3)))
    struct SettingsCLITests {
        typealias CLI = LocalStorageCLITests

        /// Writes the suite `hoard.settings.<namespace>` and lists it in the registry,
        /// as another program would.
        static func plant(_ values: [String: Any], namespace: String, in folders: CLI.Folders) throws {
            let registry = try PropertyListSerialization.data(
                fromPropertyList: [namespace: true], format: .xml, options: 0)
            try registry.write(to: folders.config.appendingPathComponent("hoard.settings.plist"))
            let suite = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
            try suite.write(to: folders.config.appendingPathComponent("hoard.settings.\(namespace).plist"))
        }

        @Test("settings get reports a value keys lists as unreadable as unreadable, with the reason")
        func getUnreadable() throws {
            try CLI.withFolders { folders in
                // Given a namespace holding an integer another program stored, and a readable value
                try Self.plant(["count": 42, "ok": Data("fine".utf8)], namespace: "com.example.mixed", in: folders)
                let keys = try CLI.hoard(folders, "settings", "keys", "com.example.mixed")
                #expect(keys.output == "\"count\"  unreadable\n\"ok\"  4 B\n", "\(keys.errors)")

                // When each is read with get
                let unreadable = try CLI.hoard(folders, "settings", "get", "com.example.mixed", "count")
                let readable = try CLI.hoard(folders, "settings", "get", "com.example.mixed", "ok")
                let missing = try CLI.hoard(folders, "settings", "get", "com.example.mixed", "nope")

                // Then the integer is unreadable, saying what it is; a missing key has no value
                #expect(unreadable.status != 0)
                #expect(
                    unreadable.errors.contains("\"count\" in settings namespace \"com.example.mixed\" is unreadable"))
                #expect(unreadable.errors.contains("the suite holds an integer"), "\(unreadable.errors)")
                #expect(!unreadable.errors.contains("no value"))
                #expect(readable.output == "fine\n")
                #expect(missing.status != 0)
                #expect(missing.errors.contains("no value for key \"nope\""), "\(missing.errors)")
            }
        }

        @Test("settings keys names a damaged suite file kept aside, when it is found and after")
        func keysNamesKeptAside() throws {
            try CLI.withFolders { folders in
                // Given a listed namespace whose suite file is garbage
                try Self.plant(["k": Data("v".utf8)], namespace: "com.example.broken", in: folders)
                let file = folders.config.appendingPathComponent("hoard.settings.com.example.broken.plist")
                let garbage = Data("<plist>garbage".utf8)
                try garbage.write(to: file)

                // When its keys are listed, twice
                let first = try CLI.hoard(folders, "settings", "keys", "com.example.broken")
                let second = try CLI.hoard(folders, "settings", "keys", "com.example.broken")

                // Then both runs name the kept copy, which holds the damaged bytes; the
                // first also says what was wrong
                let names = try FileManager.default.contentsOfDirectory(atPath: folders.config.path)
                let kept = try #require(
                    names.first { $0.hasPrefix("hoard.settings.com.example.broken.plist.damaged-") })
                let keptPath = folders.config.appendingPathComponent(kept).path
                #expect(try Data(contentsOf: URL(fileURLWithPath: keptPath)) == garbage)
                #expect(first.status == 0, "\(first.errors)")
                #expect(first.output.isEmpty)
                #expect(first.errors.contains("was damaged and kept aside as \(keptPath)"), "\(first.errors)")
                #expect(first.errors.contains("not a property list"))
                #expect(second.errors.contains("damaged suite files kept aside"), "\(second.errors)")
                #expect(second.errors.contains(keptPath))
            }
        }
    }
}
#endif
