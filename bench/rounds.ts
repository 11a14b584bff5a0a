import { Bench } from 'tinybench'
import { envInteger } from './env.js'

export type Task = readonly [name: string, run: () => unknown]

/**
 * Runs every task once per round, all of them in each round, so that a burst of load from elsewhere hits each
 * alike. Returns each task's operations per second, one entry per round (BENCH_ROUNDS, default 7; BENCH_TIME_MS
 * per task per round, default 300).
 */
export async function throughputRounds(tasks: readonly Task[], warmupMs: number): Promise<number[][]> {
  const rounds = envInteger('BENCH_ROUNDS', 7, 1)
  const timeMs = envInteger('BENCH_TIME_MS', 300, 10)
  const perTask: number[][] = tasks.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const bench = new Bench({ time: timeMs, warmup: round === 0, warmupTime: warmupMs })
    for (const [name, run] of tasks) bench.add(name, run)
    await bench.run()
    tasks.forEach(([name], i) => {
      const result = bench.getTask(name)?.result as { throughput?: { mean: number } } | undefined
      if (!result?.throughput) throw new Error(`task ${name} has no result`)
      ;(perTask[i] as number[]).push(result.throughput.mean)
    })
  }
  return perTask
}
