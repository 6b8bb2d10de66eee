import Foundation

/// The cgroups of this process, read from `/proc/self/cgroup` (Linux only; `nil`
/// elsewhere or when the file is missing).
enum _ProcessCgroup {
    /// The path of the process's cgroup in the v2 (unified) hierarchy (`0::/path`).
    static func unifiedPath() -> String? {
        lines().first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    /// The path of the process's cgroup in the v1 `memory` hierarchy
    /// (`N:memory:/path`).
    static func memoryV1Path() -> String? {
        for line in lines() {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if fields.count == 3, fields[1].split(separator: ",").contains("memory") { return String(fields[2]) }
        }
        return nil
    }

    /// The smallest memory limit set on the process's cgroup or any of its ancestors,
    /// in bytes: v2 `memory.max`, else v1 `memory.limit_in_bytes`; `nil` when none is.
    static func memoryLimit() -> Int? {
        if let group = unifiedPath(),
            let limit = smallestLimit(root: "/sys/fs/cgroup", group: group, file: "memory.max")
        {
            return limit
        }
        if let group = memoryV1Path() {
            return smallestLimit(root: "/sys/fs/cgroup/memory", group: group, file: "memory.limit_in_bytes")
        }
        return nil
    }

    /// The smallest number in `file` of `group` and its ancestors under `root`
    /// ("max", a missing file, and v1's near-`Int64.max` "unlimited" count as none).
    private static func smallestLimit(root: String, group: String, file: String) -> Int? {
        var components = group.split(separator: "/").map(String.init)
        var smallest: Int?
        while true {
            let directory = ([root] + components).joined(separator: "/")
            if let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8),
                let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), limit < Int(Int64.max / 2)
            {
                smallest = min(smallest ?? limit, limit)
            }
            guard !components.isEmpty else { return smallest }
            components.removeLast()
        }
    }

    private static func lines() -> [Substring] {
        #if os(Linux) || os(Android)
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return [] }
        return text.split(separator: "\n")
        #else
        return []
        #endif
    }
}
