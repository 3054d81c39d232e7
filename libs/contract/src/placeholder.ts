/** The argv token a launch must name; the runner replaces every occurrence with the result path. */
export const RESULT_FILE_PLACEHOLDER = '{result_file}';

/** Whether an argv names the result file: the runner refuses one that does not, making nothing. */
export function namesResultFile(args: readonly string[]): boolean {
  return args.some((arg) => arg.includes(RESULT_FILE_PLACEHOLDER));
}
