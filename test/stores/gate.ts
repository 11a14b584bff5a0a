/** Holds the first handler run that enters after close() until open(); later runs pass straight through. */
export class Gate {
  private gate: Promise<void> | undefined
  private release = () => {}
  private signal = () => {}

  /** Resolves once a run is held. */
  close(): Promise<void> {
    this.gate = new Promise((resolve) => {
      this.release = resolve
    })
    return new Promise((resolve) => {
      this.signal = resolve
    })
  }

  open(): void {
    this.release()
  }

  async pass(): Promise<void> {
    const gate = this.gate
    if (gate === undefined) return
    this.gate = undefined
    this.signal()
    await gate
  }
}
