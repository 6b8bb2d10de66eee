import Foundation
import Testing

@Suite("Cache: no blocking work on the cooperative pool", .timeLimit(.minutes(15)))
struct CacheCooperativePoolTests {
    @Test("With every cooperative thread parked, async disk hits, write-behind and flush still complete")
    func worksWithThePoolParked() async throws {
        // In a child process: parking this process's pool would starve the tests
        // running beside this one.
        let probe = try DiskTest.executable(named: "HoardPoolProbe")
        let (status, output, errors) = try await DiskTest.onThread { try DiskTest.run(probe, []) }
        #expect(status == 0, "\(output)\(errors)")
        #expect(output.contains("hit stored"))
        #expect(output.contains("behind behind"))
        #expect(output.contains("awaited awaited"))
        #expect(output.contains("needed no cooperative thread"))
    }
}
