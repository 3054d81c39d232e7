/** The argv token a launch must name; the runner replaces every occurrence with the result path. */
export const RESULT_FILE_PLACEHOLDER = '{result_file}';
