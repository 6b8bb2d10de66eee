import Foundation

/// A one-line progress bar on standard error, drawn only when it is a terminal.
final class ProgressBar {
    private let label: String
    private let enabled = isatty(STDERR_FILENO) != 0
    private var drawn = false
    private var lastPercent = -1

    init(label: String) {
        self.label = label
    }

    func update(_ completed: Int, of total: Int) {
        guard enabled, total > 0 else { return }
        let percent = min(100, completed * 100 / total)
        guard percent != lastPercent else { return }
        lastPercent = percent
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        StandardError.write(Data("\r\(label) \(bar) \(percent)% (\(completed)/\(total))".utf8))
        drawn = true
    }

    func finish() {
        if drawn { StandardError.write(Data("\n".utf8)) }
    }
}
