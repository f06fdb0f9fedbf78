/** Form fields the pages share: a labelled text input for a number, kept as the text typed (checked on submit). */

/** A labelled input for a number: `numeric` for counts, `decimal` for minutes and temperatures. */
export function NumberField(props: {
  label: string;
  name: string;
  value: string;
  set: (value: string) => void;
  mode: 'numeric' | 'decimal';
  placeholder?: string;
}) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        inputMode={props.mode}
        value={props.value}
        onInput={(e) => props.set(e.currentTarget.value)}
        {...(props.placeholder !== undefined ? { placeholder: props.placeholder } : {})}
      />
    </label>
  );
}
