import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    /// Serialized with the disk store's suites: it mounts a tmpfs as they do.
    @Suite("MessageLog on a full disk", .timeLimit(.minutes(2)))
    struct MessageLogFullDiskTests {
        @Test(
            "On a really full disk (a 1 MiB tmpfs) appends and creating a log throw storageFull, as the disk store does"
        )
        func fullDisk() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a log on a file system of 1 MiB, and the rest of it filled
                let mountPoint = url.deletingLastPathComponent().appendingPathComponent("tmpfs")
                try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
                let (status, message) = DiskStoreFaultTests.run(
                    "/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path])
                guard status == 0 else {
                    print(
                        "MessageLog full-disk test skipped: cannot mount a tmpfs here (\(message.trimmingCharacters(in: .whitespacesAndNewlines)))"
                    )
                    return
                }
                defer { _ = DiskStoreFaultTests.run("/bin/umount", ["-l", mountPoint.path]) }
                let log = try rawLog(
                    mountPoint.appendingPathComponent("events.log"), maximumBytes: 4 << 20, overwrites: false)
                try log.append(Data("before".utf8))
                let ballastPath = mountPoint.appendingPathComponent("ballast").path
                try #require(FileManager.default.createFile(atPath: ballastPath, contents: nil))
                let ballast = FileHandle(forWritingAtPath: ballastPath)
                var filled = false
                for _ in 0..<512 {
                    do {
                        try ballast?.write(contentsOf: Data(count: 4096))
                    } catch {
                        filled = true
                        break
                    }
                }
                try? ballast?.close()
                try #require(filled, "the tmpfs should be full")

                // When more is appended than the disk holds
                var failure: HoardError?
                for i in 0..<300 {
                    do {
                        try log.append(Data(repeating: UInt8(i % 251), count: 4_000))
                    } catch {
                        failure = error as? HoardError
                        break
                    }
                }

                // Then the error says the disk is full, and the log still reads
                #expect(failure?.code == .storageFull, "\(String(describing: failure))")
                #expect(try log.messages().first == Data("before".utf8))

                // And creating a new log says so too
                let creation = #expect(throws: HoardError.self) {
                    try rawLog(mountPoint.appendingPathComponent("new.log"), maximumBytes: 4096, overwrites: false)
                }
                #expect(creation?.code == .storageFull, "\(String(describing: creation))")
                #expect(
                    !FileManager.default.fileExists(atPath: mountPoint.appendingPathComponent("new.log").path),
                    "a log that could not be created leaves no empty file")
            }
        }
    }
}
