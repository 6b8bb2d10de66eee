import Foundation
import Hoard
import Testing

@Suite("MessageLog special files", .timeLimit(.minutes(1)))
struct MessageLogSpecialFileTests {
    @Test("A FIFO at the log's path is refused with ioFailed by both initializers, without waiting for a writer")
    func fifoIsRefused() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("pipe.log")
            #expect(mkfifo(url.path, 0o600) == 0)
            // Opening a FIFO for reading would wait for a writer forever: the reader must not.
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.code == .ioFailed)
            let writer = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 4096, overwrites: false) }
            #expect(writer?.code == .ioFailed)
            var info = stat()
            #expect(lstat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO is left in place")
        }
    }

    @Test("A device at the log's path (a link to /dev/null) is refused, not taken for a new log")
    func deviceIsRefused() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("null.log")
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/null")
            // /dev/null reads as empty: without the check it opened as a new, writable log
            // whose header went nowhere, and the first append threw fileCorrupted.
            let writer = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 4096, overwrites: false) }
            #expect(writer?.code == .ioFailed)
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.code == .ioFailed)
        }
    }

    @Test("A directory at the log's path is refused with ioFailed by both initializers")
    func directoryIsRefused() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("folder.log")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let writer = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 4096, overwrites: false) }
            #expect(writer?.code == .ioFailed)
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.code == .ioFailed)
        }
    }

    @Test("A symbolic link to a log opens the log it names")
    func symbolicLinkToALog() throws {
        try withTemporaryDirectory { directory in
            let target = directory.appendingPathComponent("real.log")
            let link = directory.appendingPathComponent("link.log")
            try rawLog(target, maximumBytes: 4096, overwrites: false).append(Data("one".utf8))
            try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
            let log = try rawLog(link, maximumBytes: 4096, overwrites: false)
            try log.append(Data("two".utf8))
            #expect(
                try MessageLog<Data>(forReadingFrom: target, codec: .cacheValue).messages() == [
                    Data("one".utf8), Data("two".utf8),
                ])
        }
    }
}
